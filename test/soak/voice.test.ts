/** The soak's reading of Herald's voice counters (soak/voice.ts). */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { voiceFigures } from '../../soak/voice.ts';

let server: Server | undefined;
afterEach(() => {
  server?.close();
  server = undefined;
});

const serve = async (body: string): Promise<number> => {
  server = createServer((_req, res) => res.end(body));
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

describe('voiceFigures', () => {
  it('reads the five counters from the metrics text', async () => {
    const port = await serve(
      [
        '# HELP herald_voice_packets_total Voice packets sent.',
        'herald_voice_packets_total 1200',
        'herald_voice_late_packets_total 3',
        'herald_voice_starved_frames_total 17',
        'herald_voice_gaps_total 5',
        'herald_voice_slow_starts_total 2',
        'herald_voice_sessions 4',
      ].join('\n'),
    );
    expect(await voiceFigures(port)).toEqual({
      packets: 1200,
      latePackets: 3,
      starvedFrames: 17,
      gaps: 5,
      slowStarts: 2,
    });
  });

  it('is undefined when a counter is missing, or nothing answers', async () => {
    const port = await serve('herald_voice_packets_total 1\n');
    expect(await voiceFigures(port)).toBeUndefined();
    await new Promise((resolve) => server?.close(resolve));
    expect(await voiceFigures(port)).toBeUndefined();
  });
});
