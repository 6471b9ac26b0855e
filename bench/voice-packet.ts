/**
 * A voice packet as @discordjs/voice builds it for each frame, and as the unpatched library built it: for
 * `npm run bench:dave-frame` (the two side by side) and patch 007's test (the same bytes).
 */
import { Networking } from '@discordjs/voice';
import sodium from 'sodium-native';

/** What @discordjs/voice keeps per connection for its packets (private in its typings). */
export interface PacketConnection {
  encryptionMode: string;
  secretKey: Uint8Array;
  nonce: number;
  nonceBuffer: Buffer;
  sequence: number;
  timestamp: number;
  ssrc: number;
  rtpHeader?: Buffer;
}

/** The library's DAVESession as the packet sees it: `encrypt` of each frame. */
export interface FrameEncryptor {
  encrypt(frame: Buffer): Buffer;
}

const networking = Networking.prototype as unknown as {
  createAudioPacket(opus: Buffer, data: PacketConnection, dave?: FrameEncryptor): Buffer;
};

/** `Networking.createAudioPacket`, the method each prepared frame goes through (patched by 007). */
export const createAudioPacket = (opus: Buffer, data: PacketConnection, dave?: FrameEncryptor): Buffer =>
  networking.createAudioPacket(opus, data, dave);

/**
 * The unpatched createAudioPacket and encryptOpusPacket in XChaCha20-Poly1305 mode through sodium-native: the header,
 * the ciphertext in a buffer of its own, the nonce's first 4 bytes, concatenated into a fourth.
 */
export function unpatchedPacket(opus: Buffer, data: PacketConnection, dave?: FrameEncryptor): Buffer {
  data.rtpHeader ??= Buffer.alloc(12);
  const header = data.rtpHeader;
  header[0] = 0x80;
  header[1] = 0x78;
  header.writeUIntBE(data.sequence, 2, 2);
  header.writeUIntBE(data.timestamp, 4, 4);
  header.writeUIntBE(data.ssrc, 8, 4);
  const payload = dave?.encrypt(opus) ?? opus;
  data.nonce++;
  if (data.nonce > 2 ** 32 - 1) data.nonce = 0;
  data.nonceBuffer.writeUInt32BE(data.nonce, 0);
  const sealed = Buffer.allocUnsafe(payload.length + sodium.crypto_aead_xchacha20poly1305_ietf_ABYTES);
  sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(
    sealed,
    payload,
    header,
    null,
    data.nonceBuffer,
    data.secretKey,
  );
  return Buffer.concat([header, ...[sealed, data.nonceBuffer.subarray(0, 4)]]);
}
