/**
 * The patch in patches/@discordjs+voice+0.19.2+005+connected-udp.patch (see patches/README.md): a voice
 * connection's UDP socket is connected to the voice server, so each send skips Node's address lookup and the
 * kernel's route lookup. IP discovery still works, audio arrives intact and in order, a socket that cannot connect
 * still sends (with the address), and the ICMP errors a connected socket hears are debug messages, not errors.
 * A real VoiceUDPSocket against a UDP server on loopback that answers IP discovery as Discord does.
 */
import dgram from 'node:dgram';
import { VoiceUDPSocket } from '@discordjs/voice';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { discoveryReply, isDiscoveryRequest } from '../../emulators/discord/ip-discovery.ts';

/** A voice server's UDP side: answers IP discovery, records every other datagram but the 8-byte keep-alives. */
async function startVoiceServer() {
  const socket = dgram.createSocket('udp4');
  const received: Buffer[] = [];
  socket.on('message', (message, remote) => {
    if (isDiscoveryRequest(message)) {
      socket.send(discoveryReply(message, remote), remote.port, remote.address);
    } else if (message.length !== 8) {
      received.push(message);
    }
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { socket, port: socket.address().port, received };
}

/** A VoiceUDPSocket to `port` on loopback, with what it emits recorded. */
function createVoiceSocket(port: number) {
  const udp = new VoiceUDPSocket({ ip: '127.0.0.1', port });
  const errors: Error[] = [];
  const debug: string[] = [];
  udp.on('error', (error: Error) => errors.push(error));
  udp.on('debug', (message: string) => debug.push(message));
  // Private in the typings; the dgram socket underneath is what the patch connects.
  const { socket } = udp as unknown as { socket: dgram.Socket };
  return { udp, socket, errors, debug };
}

/** Fifty 160-byte packets, each filled with its own byte. */
const audio = Array.from({ length: 50 }, (_, i) => Buffer.alloc(160, i));

const cleanup: (() => void)[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const close of cleanup.splice(0)) close();
});

describe('@discordjs/voice VoiceUDPSocket (patched: connected to the voice server)', () => {
  it('connects to the voice server; IP discovery and audio go through the connected socket', async () => {
    const server = await startVoiceServer();
    const { udp, socket, errors } = createVoiceSocket(server.port);
    cleanup.push(
      () => udp.destroy(),
      () => server.socket.close(),
    );

    const local = await udp.performIPDiscovery(1234);

    expect(local).toEqual({ ip: '127.0.0.1', port: socket.address().port });
    // Unpatched: ERR_SOCKET_DGRAM_NOT_CONNECTED, every send resolves the address and is routed anew.
    expect(socket.remoteAddress()).toEqual({ address: '127.0.0.1', family: 'IPv4', port: server.port });
    for (const packet of audio) udp.send(packet);
    await vi.waitFor(() => expect(server.received).toHaveLength(audio.length));
    expect(server.received).toEqual(audio);
    expect(errors).toEqual([]);
  });

  it('reports the ICMP errors a connected socket hears (port closed) as debug messages, not errors', async () => {
    const server = await startVoiceServer();
    const { udp, errors, debug } = createVoiceSocket(server.port);
    cleanup.push(() => udp.destroy());
    await udp.performIPDiscovery(1234);
    server.socket.close();

    // On loopback the kernel answers each datagram to a closed port with ICMP port unreachable at once.
    await vi.waitFor(() => {
      udp.send(Buffer.alloc(160));
      expect(debug).toContain('ICMP error for an earlier datagram: recvmsg ECONNREFUSED');
    });
    expect(errors).toEqual([]);
  });

  it.each([
    {
      // In the constructor, before anyone listens for its debug message.
      failure: 'connect throws',
      errors: [],
      debug: 0,
      calls: 1,
      provoke: () =>
        vi.spyOn(dgram.Socket.prototype, 'connect').mockImplementationOnce(() => {
          throw Object.assign(new Error('connect EINVAL (test)'), { code: 'EINVAL' });
        }),
    },
    {
      failure: 'connect calls back with an error',
      errors: [],
      debug: 1,
      calls: 1,
      provoke: () =>
        vi
          .spyOn(dgram.Socket.prototype, 'connect')
          .mockImplementationOnce((_port: number, _address?: string | (() => void), callback?: unknown) => {
            process.nextTick(callback as (error: Error) => void, new Error('connect ENETUNREACH (test)'));
          }),
    },
    {
      // Node then drops the connect it had queued behind the bind, and calls nothing back; the first send binds again.
      failure: 'the bind fails',
      errors: ['bind EMFILE (test)'],
      debug: 1,
      calls: 2,
      provoke: () =>
        vi.spyOn(dgram.Socket.prototype, 'bind').mockImplementationOnce(function (this: dgram.Socket) {
          process.nextTick(() =>
            this.emit('error', Object.assign(new Error('bind EMFILE (test)'), { code: 'EMFILE' })),
          );
          return this;
        }),
    },
  ])(
    'when $failure, still discovers its address and sends, with the address',
    async ({ errors, debug, calls, provoke }) => {
      const server = await startVoiceServer();
      const spy = provoke();
      const voice = createVoiceSocket(server.port);
      cleanup.push(
        () => voice.udp.destroy(),
        () => server.socket.close(),
      );

      const local = await voice.udp.performIPDiscovery(1234);

      expect(spy).toHaveBeenCalledTimes(calls);
      expect(local).toEqual({ ip: '127.0.0.1', port: voice.socket.address().port });
      expect(() => voice.socket.remoteAddress()).toThrow(
        expect.objectContaining({ code: 'ERR_SOCKET_DGRAM_NOT_CONNECTED' }),
      );
      for (const packet of audio) voice.udp.send(packet);
      await vi.waitFor(() => expect(server.received).toHaveLength(audio.length));
      expect(server.received).toEqual(audio);
      expect(voice.errors.map((error) => error.message)).toEqual(errors);
      expect(
        voice.debug.filter((message) => message.startsWith('Could not connect the socket')),
      ).toHaveLength(debug);
    },
  );
});
