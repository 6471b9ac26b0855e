/**
 * The voice server's transport encryption (emulators/discord/rtp.ts, voice.ts): both modes Discord offers, in its
 * order; the session's mode decrypts its packets, built as @discordjs/voice builds them (`createAudioPacket`:
 * 12-byte RTP header as the AAD, ciphertext || 16-byte tag, 4-byte nonce counter; the nonce is the counter and
 * zero bytes), and nothing that was altered decrypts.
 */
import { createCipheriv, createSecretKey } from 'node:crypto';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { crypto_aead_xchacha20poly1305_ietf_encrypt } from 'sodium-native';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { DaveMedia } from '../../../emulators/discord/dave-media.ts';
import {
  AES_MODE,
  decryptRtp,
  type EncryptionMode,
  transportKey,
  XCHACHA_MODE,
} from '../../../emulators/discord/rtp.ts';
import { trustedTestCertificate } from '../../../emulators/discord/tls.ts';
import { type CapturedFrame, createVoiceServer, type VoiceServer } from '../../../emulators/discord/voice.ts';

const SECRET = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 11 + 5) & 0xff));
const SSRC = 0x0bad_cafe;
const OPUS = Buffer.from([0xfc, 0xff, 0xfe, 0x01, 0x02, 0x03]);

/** The 12-byte RTP header @discordjs/voice writes: version 2, payload type 120, sequence, timestamp, SSRC. */
function rtpHeader(ssrc: number, seq = 7, timestamp = 960 * 7): Buffer {
  const header = Buffer.alloc(12);
  header[0] = 0x80;
  header[1] = 0x78;
  header.writeUInt16BE(seq, 2);
  header.writeUInt32BE(timestamp, 4);
  header.writeUInt32BE(ssrc, 8);
  return header;
}

/** Ciphertext || tag of `plain` under `mode`, with `header` as the AAD and `counter` as the nonce's first bytes. */
function seal(mode: EncryptionMode, key: Buffer, header: Buffer, plain: Buffer, counter: Buffer): Buffer {
  if (mode === AES_MODE) {
    const cipher = createCipheriv('aes-256-gcm', key, Buffer.concat([counter, Buffer.alloc(8)]));
    cipher.setAAD(header);
    return Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  }
  const sealed = Buffer.alloc(plain.length + 16);
  const nonce = Buffer.concat([counter, Buffer.alloc(20)]);
  crypto_aead_xchacha20poly1305_ietf_encrypt(sealed, plain, header, null, nonce, key);
  return sealed;
}

/** A packet as @discordjs/voice sends it: header | ciphertext || tag | counter (big-endian). */
function packet(mode: EncryptionMode, key: Buffer, header: Buffer, plain: Buffer, nonce = 1): Buffer {
  const counter = Buffer.alloc(4);
  counter.writeUInt32BE(nonce);
  return Buffer.concat([header, seal(mode, key, header, plain, counter), counter]);
}

describe.each([AES_MODE, XCHACHA_MODE] as const)('decryptRtp in %s', (mode) => {
  const session = { guildId: 'g', transport: transportKey(mode, SECRET) };
  const sessionOf = (ssrc: number) => (ssrc === SSRC ? session : undefined);

  it('opens a packet built as @discordjs/voice builds it', () => {
    const opened = decryptRtp(packet(mode, SECRET, rtpHeader(SSRC), OPUS, 0x0102_0304), sessionOf, 12.5);
    expect(opened).toEqual({
      guildId: 'g',
      mode,
      payload: OPUS,
      frame: { receivedAt: 12.5, ssrc: SSRC, seq: 7, timestamp: 960 * 7 },
    });
  });

  it('authenticates the 4-byte extension header and drops the encrypted extension body', () => {
    // An RTP extension (X bit, profile 0xBEDE, one 32-bit word) as other Discord clients send it.
    const header = Buffer.concat([rtpHeader(SSRC), Buffer.from([0xbe, 0xde, 0x00, 0x01])]);
    header[0] = 0x90;
    const extensionBody = Buffer.from([0x10, 0x20, 0x30, 0x40]);
    const opened = decryptRtp(packet(mode, SECRET, header, Buffer.concat([extensionBody, OPUS])), sessionOf);
    expect(opened?.payload).toEqual(OPUS);
  });

  it.each([
    ['the header (sequence)', 3],
    ['the ciphertext', 12],
    ['the tag', -5],
    ['the nonce counter', -1],
  ])('refuses a packet whose %s was altered', (_, at) => {
    const tampered = packet(mode, SECRET, rtpHeader(SSRC), OPUS);
    const index = at < 0 ? tampered.length + at : at;
    tampered[index] = (tampered[index] ?? 0) ^ 0x01;
    expect(decryptRtp(tampered, sessionOf)).toBeUndefined();
  });

  it('refuses a packet sealed in the other mode', () => {
    const other = mode === AES_MODE ? XCHACHA_MODE : AES_MODE;
    expect(decryptRtp(packet(other, SECRET, rtpHeader(SSRC), OPUS), sessionOf)).toBeUndefined();
  });
});

describe('transportKey', () => {
  it('keeps AES-256-GCM key as a key object and the XChaCha20-Poly1305 key as bytes', () => {
    const aes = transportKey(AES_MODE, SECRET);
    const xchacha = transportKey(XCHACHA_MODE, SECRET);
    expect(aes.mode === AES_MODE && aes.key.equals(createSecretKey(SECRET))).toBe(true);
    expect(xchacha).toEqual({ mode: XCHACHA_MODE, key: SECRET });
  });
});

/** A raw voice gateway client of one session: what the server sent, and how the socket closed. */
interface Client {
  readonly ws: WebSocket;
  readonly received: { op: number; d: Record<string, unknown> }[];
  next(op: number): Promise<Record<string, unknown>>;
  readonly closed: Promise<number>;
}

describe('the voice server, selecting a mode (voice op 1)', () => {
  let server: VoiceServer | undefined;
  const frames: CapturedFrame[] = [];
  afterEach(async () => {
    await server?.close();
    server = undefined;
    frames.length = 0;
  });

  const start = async (xchacha: boolean): Promise<VoiceServer> => {
    const certificate = await trustedTestCertificate();
    server = await createVoiceServer({
      ...certificate,
      heartbeatIntervalMs: 13_750,
      xchacha,
      events: {
        onFrame: (_, frame) => frames.push(frame),
        onSpeaking: () => {},
        onConnectedChange: () => {},
      },
      // Without DAVE and with frames captured on arrival, the voice server only stops and asks for the DAVE group.
      dave: { stop: () => {}, group: () => undefined } as unknown as DaveMedia,
      daveOffered: () => false,
      membersDecrypt: () => false,
    });
    return server;
  };

  /** Connects and identifies as the bot of guild `g`; resolves with READY's payload. */
  const identify = async (voice: VoiceServer): Promise<Client & { ready: Record<string, unknown> }> => {
    const token = voice.allocate('g', 'bot', 'session', 'c');
    const ws = new WebSocket(`wss://${voice.endpoint}/?v=8`);
    const received: Client['received'] = [];
    const waiters = new Map<number, (d: Record<string, unknown>) => void>();
    ws.on('message', (raw) => {
      const packet = JSON.parse(String(raw)) as { op: number; d: Record<string, unknown> };
      received.push(packet);
      waiters.get(packet.op)?.(packet.d);
    });
    const closed = once(ws, 'close').then(([code]) => code as number);
    const next = (op: number) =>
      Promise.race([
        new Promise<Record<string, unknown>>((resolve) => waiters.set(op, resolve)),
        closed.then((code) => Promise.reject(new Error(`closed with ${code} before op ${op}`))),
      ]);
    const ready = next(2);
    await once(ws, 'open');
    ws.send(JSON.stringify({ op: 0, d: { server_id: 'g', user_id: 'bot', session_id: 'session', token } }));
    return { ws, received, next, closed, ready: await ready };
  };

  const select = (client: Client, mode: string): void =>
    client.ws.send(
      JSON.stringify({ op: 1, d: { protocol: 'udp', data: { address: '127.0.0.1', port: 9, mode } } }),
    );

  it.each([AES_MODE, XCHACHA_MODE] as const)(
    'offers both modes, AES first, and decrypts the packets of a session that selected %s',
    async (mode) => {
      const voice = await start(true);
      const client = await identify(voice);
      expect(client.ready.modes).toEqual([AES_MODE, XCHACHA_MODE]);
      const description = client.next(4);
      select(client, mode);
      const { mode: described, secret_key } = await description;
      expect(described).toBe(mode);

      const udp = dgram.createSocket('udp4');
      const key = Buffer.from(secret_key as number[]);
      udp.send(
        packet(mode, key, rtpHeader(Number(client.ready.ssrc)), OPUS),
        Number(client.ready.port),
        '127.0.0.1',
      );
      await expect.poll(() => frames.length).toBe(1);
      udp.close();
      expect(frames[0]).toMatchObject({ mode, payload: OPUS });
      expect(voice.rejected.count).toBe(0);
      client.ws.close();
    },
  );

  it('captures packets on arrival when nobody decrypts, and authenticates each when it is first read', async () => {
    const voice = await start(true);
    const client = await identify(voice);
    const description = client.next(4);
    select(client, XCHACHA_MODE);
    const key = Buffer.from((await description).secret_key as number[]);
    const header = (seq: number) => rtpHeader(Number(client.ready.ssrc), seq, 960 * seq);
    const tampered = packet(XCHACHA_MODE, key, header(2), OPUS);
    tampered[14] = (tampered[14] ?? 0) ^ 0x01;
    const udp = dgram.createSocket('udp4');
    for (const datagram of [packet(XCHACHA_MODE, key, header(1), OPUS), tampered]) {
      udp.send(datagram, Number(client.ready.port), '127.0.0.1');
    }
    await expect.poll(() => frames.length).toBe(2);
    udp.close();
    // Nothing was decrypted on arrival: the header alone placed each packet.
    expect(frames.map((frame) => frame.seq)).toEqual([1, 2]);
    expect(voice.rejected.count).toBe(0);
    expect(frames[0]).toMatchObject({ mode: XCHACHA_MODE, payload: OPUS, opus: OPUS, silence: false });
    expect(voice.rejected.count).toBe(0);
    expect(frames[1]?.payload).toEqual(Buffer.alloc(0));
    expect(voice.rejected.count).toBe(1);
    // Read again, it is not counted twice.
    expect(frames[1]?.silence).toBe(false);
    expect(voice.rejected.count).toBe(1);
    client.ws.close();
  });

  it('offers AES-256-GCM only when told to, and closes a session selecting XChaCha20-Poly1305 with 4016', async () => {
    const client = await identify(await start(false));
    expect(client.ready.modes).toEqual([AES_MODE]);
    select(client, XCHACHA_MODE);
    expect(await client.closed).toBe(4016);
    expect(client.received.map((packet) => packet.op)).not.toContain(4);
  });

  it('closes a session selecting a mode Discord does not offer with 4016', async () => {
    const client = await identify(await start(true));
    select(client, 'xsalsa20_poly1305_lite');
    expect(await client.closed).toBe(4016);
  });
});
