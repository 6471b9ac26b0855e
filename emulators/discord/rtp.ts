/** Transport encryption of voice packets (discord-protocol.md §6–7). */
import { createDecipheriv, createSecretKey, type KeyObject } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { crypto_aead_xchacha20poly1305_ietf_decrypt } from 'sodium-native';

/** The transport encryption modes the emulator accepts: the two Discord offers, in its order. */
export const AES_MODE = 'aead_aes256_gcm_rtpsize';
export const XCHACHA_MODE = 'aead_xchacha20_poly1305_rtpsize';
/** A transport encryption mode a voice session selects (voice op 1). */
export type EncryptionMode = typeof AES_MODE | typeof XCHACHA_MODE;

/** A voice session's mode and its key in the form that mode's decryption takes. */
export type TransportKey =
  | { readonly mode: typeof AES_MODE; readonly key: KeyObject }
  | { readonly mode: typeof XCHACHA_MODE; readonly key: Buffer };

/** The RTP header fields the capture keeps. */
export interface RtpFields {
  /** `performance.now()` when the datagram arrived. */
  readonly receivedAt: number;
  readonly ssrc: number;
  readonly seq: number;
  readonly timestamp: number;
}

// Both modes' authentication tag, between the ciphertext and the 4-byte nonce counter.
const TAG_BYTES = 16;

/** The key for `mode` made from the session description's 32-byte secret, once per session. */
export function transportKey(mode: EncryptionMode, secretKey: Buffer): TransportKey {
  // A key object spares AES-GCM an import of the raw key for each of the 50 packets a second per stream.
  return mode === AES_MODE ? { mode, key: createSecretKey(secretKey) } : { mode, key: secretKey };
}

/** A packet whose RTP header was read and whose session was found: `open()` authenticates and decrypts it. */
export interface SealedRtp {
  readonly guildId: string;
  readonly mode: EncryptionMode;
  readonly frame: RtpFields;
  /** The payload inside transport encryption, or undefined when the packet does not authenticate. */
  open(): Buffer | undefined;
}

/**
 * Reads one packet of an rtpsize mode without decrypting it: the RTP header is in the clear. Undefined when it is
 * too short or no session has its SSRC and a key. `receivedAt` is when it arrived (`performance.now()`).
 */
export function readRtp(
  packet: Buffer,
  sessionOf: (
    ssrc: number,
  ) => { readonly guildId: string; readonly transport: TransportKey | undefined } | undefined,
  receivedAt: number = performance.now(),
): SealedRtp | undefined {
  const first = packet[0] ?? 0;
  const csrcCount = first & 0x0f;
  const hasExtension = (first & 0x10) !== 0;
  // rtpsize modes authenticate the fixed header, CSRCs and the 4-byte extension header, and encrypt the rest.
  const headerLength = 12 + 4 * csrcCount + (hasExtension ? 4 : 0);
  const ssrc = packet.readUInt32BE(8);
  const allocation = sessionOf(ssrc);
  const transport = allocation?.transport;
  if (!allocation || !transport || packet.length < headerLength + TAG_BYTES + 4) return undefined;
  return {
    guildId: allocation.guildId,
    mode: transport.mode,
    frame: { receivedAt, ssrc, seq: packet.readUInt16BE(2), timestamp: packet.readUInt32BE(4) },
    open: () => {
      const plain = open(
        transport,
        packet.subarray(0, headerLength),
        packet.subarray(headerLength, packet.length - 4),
        packet.subarray(packet.length - 4),
      );
      if (!plain) return undefined;
      const extensionWords = hasExtension ? packet.readUInt16BE(headerLength - 2) : 0;
      return plain.subarray(extensionWords * 4);
    },
  };
}

/**
 * Decrypts one packet of an rtpsize mode: AAD = RTP header, then ciphertext, tag and a 4-byte counter; the nonce
 * is the counter followed by zero bytes (8 for AES-256-GCM's IV, 20 for XChaCha20-Poly1305's nonce).
 * `receivedAt` is when it arrived (`performance.now()`), default now.
 */
export function decryptRtp(
  packet: Buffer,
  sessionOf: Parameters<typeof readRtp>[1],
  receivedAt: number = performance.now(),
): { guildId: string; mode: EncryptionMode; payload: Buffer; frame: RtpFields } | undefined {
  const sealed = readRtp(packet, sessionOf, receivedAt);
  const payload = sealed?.open();
  return sealed && payload && { guildId: sealed.guildId, mode: sealed.mode, payload, frame: sealed.frame };
}

// The nonces: the packet's 4-byte counter, then zeros. Filled in place for each packet (the decryption copies it).
const AES_IV = Buffer.alloc(12);
const XCHACHA_NONCE = Buffer.alloc(24);

/** The plaintext of `sealed` (ciphertext || tag), or undefined when it does not authenticate. */
function open(transport: TransportKey, header: Buffer, sealed: Buffer, counter: Buffer): Buffer | undefined {
  const ciphertextLength = sealed.length - TAG_BYTES;
  try {
    switch (transport.mode) {
      case AES_MODE: {
        counter.copy(AES_IV);
        const decipher = createDecipheriv('aes-256-gcm', transport.key, AES_IV);
        decipher.setAAD(header);
        decipher.setAuthTag(sealed.subarray(ciphertextLength));
        return Buffer.concat([decipher.update(sealed.subarray(0, ciphertextLength)), decipher.final()]);
      }
      case XCHACHA_MODE: {
        const plain = Buffer.allocUnsafe(ciphertextLength);
        counter.copy(XCHACHA_NONCE);
        crypto_aead_xchacha20poly1305_ietf_decrypt(plain, null, sealed, header, XCHACHA_NONCE, transport.key);
        return plain;
      }
    }
  } catch {
    return undefined;
  }
}
