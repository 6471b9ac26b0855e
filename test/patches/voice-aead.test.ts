/**
 * Herald's patch of @discordjs/voice (patches/@discordjs+voice+0.19.2+001+aead-key-object.patch, see
 * patches/README.md): once Discord's session description has chosen AES-256-GCM, every voice packet is encrypted
 * with one KeyObject made for the connection (never a raw key, which Node imports again per packet), and the
 * packets are still exactly what Discord expects: RTP header | ciphertext | tag | 4-byte nonce suffix.
 */
import crypto, { KeyObject } from 'node:crypto';
import type { Networking } from '@discordjs/voice';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { readyNetworking as readyWith } from '../support/voice-networking.ts';

const SECRET = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 7 + 3) & 0xff));
const SSRC = 0x1234_5678;
const readyNetworking = (): Networking => readyWith({ secret: SECRET, ssrc: SSRC });
/** Decrypts one packet the way Discord does; returns the Opus payload. */
function open(packet: Buffer): Buffer {
  const header = packet.subarray(0, 12);
  const nonce = Buffer.alloc(12);
  packet.copy(nonce, 0, packet.length - 4);
  const decipher = crypto.createDecipheriv('aes-256-gcm', SECRET, nonce);
  decipher.setAAD(header);
  decipher.setAuthTag(packet.subarray(packet.length - 20, packet.length - 4));
  return Buffer.concat([decipher.update(packet.subarray(12, packet.length - 20)), decipher.final()]);
}

describe('@discordjs/voice AEAD patch', () => {
  const networkings: Networking[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    for (const networking of networkings.splice(0)) networking.destroy();
  });

  it('encrypts every packet with one KeyObject made for the connection', () => {
    const networking = readyNetworking();
    networkings.push(networking);
    const createCipheriv = vi.spyOn(crypto, 'createCipheriv');
    for (let i = 0; i < 3; i++) networking.prepareAudioPacket(Buffer.from([0xf8, 0xff, 0xfe, i]));

    expect(createCipheriv).toHaveBeenCalledTimes(3);
    const keys = createCipheriv.mock.calls.map((call) => call[1]);
    for (const key of keys) expect(key).toBeInstanceOf(KeyObject);
    expect(new Set(keys).size).toBe(1);
    expect((keys[0] as KeyObject).export().equals(SECRET)).toBe(true);
  });

  it('sends packets Discord can decrypt, with sequence, timestamp and nonce advancing', () => {
    const networking = readyNetworking();
    networkings.push(networking);
    const packets: Buffer[] = [];
    for (let i = 0; i < 3; i++) {
      const packet = networking.prepareAudioPacket(Buffer.from([0xf8, 0xff, 0xfe, i]));
      if (!packet) throw new Error('no packet prepared');
      packets.push(packet);
      networking.dispatchAudio();
    }

    packets.forEach((packet, i) => {
      expect(packet.length).toBe(12 + 4 + 16 + 4);
      expect(packet[0]).toBe(0x80);
      expect(packet[1]).toBe(0x78);
      expect(packet.readUInt32BE(8)).toBe(SSRC);
      expect(packet.readUInt32BE(packet.length - 4)).toBe(i + 1);
      expect([...open(packet)]).toEqual([0xf8, 0xff, 0xfe, i]);
    });
    const sequence = (packet: Buffer) => packet.readUInt16BE(2);
    const timestamp = (packet: Buffer) => packet.readUInt32BE(4);
    const [first, second] = packets as [Buffer, Buffer];
    expect(sequence(second)).toBe((sequence(first) + 1) % 2 ** 16);
    expect(timestamp(second)).toBe((timestamp(first) + 960) % 2 ** 32);
    // The header buffer is reused per connection: an earlier packet must not change when a later one is made.
    expect(open(first)[3]).toBe(0);
  });
});
