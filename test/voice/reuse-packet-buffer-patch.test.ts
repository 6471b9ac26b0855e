/**
 * The patch in patches/@discordjs+voice+0.19.2+010+reuse-packet-buffer.patch (see patches/README.md): a connection
 * writes each voice packet into a buffer of its own, again and again, once the packet before has left Node (the
 * socket connected, nothing in its send queue). Unpatched, every packet was a new slice of Node's shared pool, which
 * lived from one audio cycle to the next and, promoted in a busy process, kept its 64 KiB slab until a full collection.
 * The library's own methods, called as the audio cycle calls them: prepareAudioPacket, then dispatchAudio.
 */
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { Networking, VoiceUDPSocket } from '@discordjs/voice';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { createAudioPacket, type PacketConnection, unpatchedPacket } from '../../bench/voice-packet.ts';

const opus = (fill: number, length = 120): Buffer => Buffer.alloc(length, fill);

function connectionData(): PacketConnection & { speaking: boolean } {
  return {
    encryptionMode: 'aead_xchacha20_poly1305_rtpsize',
    secretKey: new Uint8Array(Buffer.alloc(32, 7)),
    nonce: 0,
    nonceBuffer: Buffer.alloc(24),
    sequence: 1,
    timestamp: 0,
    ssrc: 1234,
    speaking: true,
  };
}

interface Voice {
  prepareAudioPacket(opus: Buffer): Buffer | undefined;
  dispatchAudio(): boolean;
}

/** A Networking in its Ready state whose socket records a copy of each packet as it was when sent. */
function readyNetworking(udp: { sent: boolean }) {
  const sent: Buffer[] = [];
  const data = connectionData();
  const networking = Object.create(Networking.prototype) as Voice & { _state: unknown };
  networking._state = {
    code: 4,
    connectionData: data,
    udp: Object.assign(udp, { send: (packet: Buffer) => sent.push(Buffer.from(packet)) }),
    ws: { sendPacket: () => {} },
  };
  return { networking, sent, data };
}

beforeAll(async () => {
  // The library loads its encryption package asynchronously when imported; until then every packet throws.
  await vi.waitFor(() => createAudioPacket(opus(1), connectionData()));
});

describe('@discordjs/voice Networking packets (patched: one buffer a connection, reused once sent)', () => {
  it('writes the next packet where the last one was, once it has left Node', () => {
    const { networking } = readyNetworking({ sent: true });

    const first = networking.prepareAudioPacket(opus(1)) as Buffer;
    networking.dispatchAudio();
    const second = networking.prepareAudioPacket(opus(2)) as Buffer;

    expect(second.buffer).toBe(first.buffer);
    expect(second.byteOffset).toBe(first.byteOffset);
    // A buffer of its own, not a slab of Node's pool shared with whatever else was cut from it.
    expect(second.buffer.byteLength).toBeLessThan(Buffer.poolSize);
  });

  it('never writes over a packet still waiting in the socket’s queue: the next one gets a new buffer', () => {
    const udp = { sent: false };
    const { networking, sent } = readyNetworking(udp);

    const first = networking.prepareAudioPacket(opus(1)) as Buffer;
    networking.dispatchAudio();
    const held = Buffer.from(first);
    networking.prepareAudioPacket(opus(2));

    expect(first).toEqual(held);
    expect(sent).toEqual([held]);
  });

  it('reuses the buffer of a packet prepared and then replaced before it was sent', () => {
    const { networking } = readyNetworking({ sent: false });

    const dropped = networking.prepareAudioPacket(opus(1)) as Buffer;
    const next = networking.prepareAudioPacket(opus(2)) as Buffer;

    expect(next.buffer).toBe(dropped.buffer);
    expect(next.byteOffset).toBe(dropped.byteOffset);
  });

  it('sends the bytes the library always sent, a larger packet in a larger buffer', () => {
    const { networking, sent } = readyNetworking({ sent: true });
    const reference = connectionData();
    const frames = [opus(1), opus(2, 900), opus(3, 60), opus(4)];

    for (const frame of frames) {
      networking.prepareAudioPacket(frame);
      networking.dispatchAudio();
    }

    expect(sent).toEqual(
      frames.map((frame) => {
        const packet = unpatchedPacket(frame, reference);
        reference.sequence++;
        reference.timestamp += 960;
        return packet;
      }),
    );
  });
});

describe('@discordjs/voice VoiceUDPSocket.sent (patched)', () => {
  it('is true once connected with nothing queued, false while the connect or a send is pending', async () => {
    const server = createSocket('udp4');
    server.bind(0, '127.0.0.1');
    await once(server, 'listening');
    const socket = new VoiceUDPSocket({ ip: '127.0.0.1', port: server.address().port });
    try {
      const inner = (socket as unknown as { socket: { getSendQueueCount(): number } }).socket;
      const sent = () => (socket as unknown as { sent: boolean }).sent;
      (socket as unknown as { connect(): void }).connect();
      expect(sent()).toBe(false);
      await vi.waitFor(() => expect(sent()).toBe(true));
      vi.spyOn(inner, 'getSendQueueCount').mockReturnValue(1);
      expect(sent()).toBe(false);
    } finally {
      socket.destroy();
      server.close();
    }
  });
});
