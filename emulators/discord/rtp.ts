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

/** What a packet's SSRC names: the session's guild and its transport key (none before the session description). */
export type SessionOfSsrc = (
  ssrc: number,
) => { readonly guildId: string; readonly transport: TransportKey | undefined } | undefined;

// rtpsize modes authenticate the fixed header, CSRCs and the 4-byte extension header, and encrypt the rest.
const headerLengthOf = (packet: Buffer): number =>
  12 + 4 * ((packet[0] ?? 0) & 0x0f) + ((packet[0] ?? 0) & 0x10 ? 4 : 0);

/**
 * The session of one packet of an rtpsize mode, read from its clear RTP header without decrypting anything:
 * undefined when no session has its SSRC and a key, or the packet is too short to hold a tag and a nonce.
 */
export function rtpSession(
  packet: Buffer,
  sessionOf: SessionOfSsrc,
): { readonly guildId: string; readonly transport: TransportKey } | undefined {
  const allocation = sessionOf(packet.readUInt32BE(8));
  const transport = allocation?.transport;
  if (!allocation || !transport || packet.length < headerLengthOf(packet) + TAG_BYTES + 4) return undefined;
  return { guildId: allocation.guildId, transport };
}

/** The RTP header fields of `packet`, which arrived at `receivedAt`. */
export function rtpFields(packet: Buffer, receivedAt: number): RtpFields {
  return {
    receivedAt,
    ssrc: packet.readUInt32BE(8),
    seq: packet.readUInt16BE(2),
    timestamp: packet.readUInt32BE(4),
  };
}

/**
 * The payload inside a packet's transport encryption (after any RTP extension's body), or undefined when it does
 * not authenticate under `transport`.
 */
export function openRtp(packet: Buffer, transport: TransportKey): Buffer | undefined {
  const headerLength = headerLengthOf(packet);
  const plain = open(
    transport,
    packet.subarray(0, headerLength),
    packet.subarray(headerLength, packet.length - 4),
    packet.subarray(packet.length - 4),
  );
  if (!plain) return undefined;
  const extensionWords = (packet[0] ?? 0) & 0x10 ? packet.readUInt16BE(headerLength - 2) : 0;
  return plain.subarray(extensionWords * 4);
}

/**
 * Decrypts one packet of an rtpsize mode: AAD = RTP header, then ciphertext, tag and a 4-byte counter; the nonce
 * is the counter followed by zero bytes (8 for AES-256-GCM's IV, 20 for XChaCha20-Poly1305's nonce).
 * `receivedAt` is when it arrived (`performance.now()`), default now.
 */
export function decryptRtp(
  packet: Buffer,
  sessionOf: SessionOfSsrc,
  receivedAt: number = performance.now(),
): { guildId: string; mode: EncryptionMode; payload: Buffer; frame: RtpFields } | undefined {
  const session = rtpSession(packet, sessionOf);
  const payload = session && openRtp(packet, session.transport);
  return (
    session &&
    payload && {
      guildId: session.guildId,
      mode: session.transport.mode,
      payload,
      frame: rtpFields(packet, receivedAt),
    }
  );
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
