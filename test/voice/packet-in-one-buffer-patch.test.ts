/**
 * The patch in patches/@discordjs+voice+0.19.2+007+packet-in-one-buffer.patch (see patches/README.md): in
 * XChaCha20-Poly1305 mode with sodium-native, `Networking.createAudioPacket` builds each voice packet in one buffer:
 * the RTP header, the ciphertext written in place by sodium, then the nonce's 4 bytes. Unpatched, the ciphertext
 * had a buffer of its own and Buffer.concat copied header, ciphertext and nonce into a fourth. The bytes are the same.
 * The library's own method, called as Networking.prepareAudioPacket calls it for every frame.
 */
import crypto from 'node:crypto';
import sodium from 'sodium-native';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAudioPacket, type PacketConnection, unpatchedPacket } from '../../bench/voice-packet.ts';

/** What the library keeps per connection for its packets, at a given nonce. */
function connection(encryptionMode = 'aead_xchacha20_poly1305_rtpsize', nonce = 41): PacketConnection {
  return {
    encryptionMode,
    secretKey: new Uint8Array(Buffer.alloc(32, 7)),
    nonce,
    nonceBuffer: Buffer.alloc(encryptionMode === 'aead_aes256_gcm_rtpsize' ? 12 : 24),
    sequence: 65_000,
    timestamp: 4_000_000_000,
    ssrc: 1234,
  };
}

/** A stand-in for the library's DAVESession: its `encrypt` is what createAudioPacket calls on each frame. */
const dave = { encrypt: (frame: Buffer) => Buffer.concat([Buffer.from('dave:'), frame]) };

const opus = Buffer.alloc(120, 0x5a);

beforeAll(async () => {
  // The library loads its encryption package asynchronously when imported; until then every packet throws.
  await vi.waitFor(() => createAudioPacket(opus, connection()));
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('@discordjs/voice Networking.createAudioPacket (patched: one buffer per packet)', () => {
  it('encrypts the frame in place, inside the packet it returns, with no Buffer.concat', () => {
    const encrypt = vi.spyOn(sodium, 'crypto_aead_xchacha20poly1305_ietf_encrypt');
    const concat = vi.spyOn(Buffer, 'concat');

    const packet = createAudioPacket(opus, connection());

    expect(encrypt).toHaveBeenCalledTimes(1);
    const [cipherText] = encrypt.mock.calls[0] as unknown as [Uint8Array];
    // Unpatched: a buffer of its own (a slice of the same pool, elsewhere in it), copied into the packet afterwards.
    expect(cipherText.buffer).toBe(packet.buffer);
    expect(cipherText.byteOffset).toBe(packet.byteOffset + 12);
    expect(cipherText.byteLength).toBe(opus.length + 16);
    expect(concat).not.toHaveBeenCalled();
  });

  it('sends the bytes the library always sent: header, ciphertext and tag, the nonce', () => {
    const data = connection();
    const reference = connection();

    expect(createAudioPacket(opus, data)).toEqual(unpatchedPacket(opus, reference));
    expect(createAudioPacket(opus, data)).toEqual(unpatchedPacket(opus, reference));
    expect(data.nonce).toBe(43);
  });

  it('encrypts what DAVE returns, and the voice server can open it', () => {
    const data = connection('aead_xchacha20_poly1305_rtpsize', 2 ** 32 - 1);

    const packet = createAudioPacket(opus, data, dave);

    // The nonce wraps to 0 after 2^32 - 1, as before.
    expect(data.nonce).toBe(0);
    expect(packet).toEqual(
      unpatchedPacket(opus, connection('aead_xchacha20_poly1305_rtpsize', 2 ** 32 - 1), dave),
    );
    const nonce = Buffer.alloc(24);
    packet.copy(nonce, 0, packet.length - 4);
    const opened = Buffer.alloc(packet.length - 12 - 4 - 16);
    sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
      opened,
      null,
      packet.subarray(12, packet.length - 4),
      packet.subarray(0, 12),
      nonce,
      data.secretKey,
    );
    expect(opened).toEqual(dave.encrypt(opus));
  });

  it('leaves AES-256-GCM packets as they were', () => {
    const data = connection('aead_aes256_gcm_rtpsize');

    const packet = createAudioPacket(opus, data);

    const header = packet.subarray(0, 12);
    const iv = Buffer.alloc(12);
    packet.copy(iv, 0, packet.length - 4);
    const decipher = crypto.createDecipheriv('aes-256-gcm', data.secretKey, iv);
    decipher.setAAD(header);
    decipher.setAuthTag(packet.subarray(packet.length - 4 - 16, packet.length - 4));
    const opened = Buffer.concat([
      decipher.update(packet.subarray(12, packet.length - 20)),
      decipher.final(),
    ]);
    expect(opened).toEqual(opus);
    expect(iv.readUInt32BE(0)).toBe(42);
  });
});
