/** Transport encryption of voice packets (discord-protocol.md §7). */
import { createDecipheriv, type KeyObject } from 'node:crypto';
import { performance } from 'node:perf_hooks';

/** The RTP header fields the capture keeps. */
export interface RtpFields {
  /** `performance.now()` when the datagram arrived. */
  readonly receivedAt: number;
  readonly ssrc: number;
  readonly seq: number;
  readonly timestamp: number;
}

/**
 * Decrypts one aead_aes256_gcm_rtpsize packet: AAD = RTP header, IV = 4-byte counter + 8 zero bytes.
 * `receivedAt` is when it arrived (`performance.now()`), default now.
 */
export function decryptRtp(
  packet: Buffer,
  sessionOf: (ssrc: number) => { readonly guildId: string; readonly key: KeyObject | undefined } | undefined,
  receivedAt: number = performance.now(),
): { guildId: string; payload: Buffer; frame: RtpFields } | undefined {
  const first = packet[0] ?? 0;
  const csrcCount = first & 0x0f;
  const hasExtension = (first & 0x10) !== 0;
  // rtpsize modes authenticate the fixed header, CSRCs and the 4-byte extension header, and encrypt the rest.
  const headerLength = 12 + 4 * csrcCount + (hasExtension ? 4 : 0);
  const ssrc = packet.readUInt32BE(8);
  const allocation = sessionOf(ssrc);
  if (!allocation?.key || packet.length < headerLength + 16 + 4) return undefined;
  const header = packet.subarray(0, headerLength);
  const counter = packet.subarray(packet.length - 4);
  const tag = packet.subarray(packet.length - 4 - 16, packet.length - 4);
  const body = packet.subarray(headerLength, packet.length - 4 - 16);
  const iv = Buffer.concat([counter, Buffer.alloc(8)]);
  let plain: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', allocation.key, iv);
    decipher.setAAD(header);
    decipher.setAuthTag(tag);
    plain = Buffer.concat([decipher.update(body), decipher.final()]);
  } catch {
    return undefined;
  }
  const extensionWords = hasExtension ? packet.readUInt16BE(headerLength - 2) : 0;
  const opus = plain.subarray(extensionWords * 4);
  return {
    guildId: allocation.guildId,
    payload: opus,
    frame: { receivedAt, ssrc, seq: packet.readUInt16BE(2), timestamp: packet.readUInt32BE(4) },
  };
}
