/**
 * What arrives on the voice UDP socket: IP discovery (discord-protocol.md §6), the client's 74-byte request and the
 * server's reply, and how a voice packet is told from keepalives.
 */

/** Whether `datagram` is an IP discovery request: 74 bytes, type 1. */
export function isDiscoveryRequest(datagram: Buffer): boolean {
  return datagram.length === 74 && datagram.readUInt16BE(0) === 1;
}

/** The reply to `request` from `remote`: type 2, length 70, the SSRC, the address NUL-padded, the port last. */
export function discoveryReply(request: Buffer, remote: { address: string; port: number }): Buffer {
  const reply = Buffer.alloc(74);
  reply.writeUInt16BE(2, 0);
  reply.writeUInt16BE(70, 2);
  reply.writeUInt32BE(request.readUInt32BE(4), 4);
  reply.write(remote.address, 8, 'ascii');
  reply.writeUInt16BE(remote.port, 72);
  return reply;
}

/**
 * Whether `datagram` can be a voice packet of an rtpsize mode: RTP version 2, a 12-byte header, a 16-byte tag and the
 * 4-byte nonce at least. Keepalives (8 bytes) are not.
 */
export function isVoicePacket(datagram: Buffer): boolean {
  return datagram.length >= 12 + 16 + 4 && (datagram[0] ?? 0) >> 6 === 2;
}
