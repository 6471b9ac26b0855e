/**
 * DAVE's cost on a cold `/speak`, with Herald as its own process (`node src/index.ts`, as `npm start` with `SHARD_COUNT=1`), as it is
 * on Discord: Herald on one machine, the voice server and the members on others. `npm run bench:latency` runs
 * Herald inside the bench process, where the emulated gateway's work (signing proposals, relaying commits and
 * welcomes, every member's op 23) takes turns with Herald's own handshake on one event loop; here only the two
 * cores are shared. Two worlds side by side, one offering DAVE and one declining it, each with its own Herald
 * process; runs alternate between them so both see the same load. Cold: Herald is not in voice, a member already
 * is; the figure is `/speak` sent → first voice packet at the voice server, then Herald leaves.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Channel,
  type DiscordEmulator,
  type Guild,
  type Member,
  startDiscordEmulator,
} from '../emulators/discord/index.ts';
import { trustedTestCertificate } from '../emulators/discord/tls.ts';
import { startTtsEmulator, type TtsEmulator } from '../emulators/tts/index.ts';
import { heraldEnv } from '../test/e2e/harness.ts';
import { type HeraldProcess, startHeraldProcess } from './herald-process.ts';

/** One world: an emulated Discord (offering DAVE or not), a TTS service, a server, and Herald's process. */
interface World {
  readonly discord: DiscordEmulator;
  readonly tts: TtsEmulator;
  readonly guild: Guild;
  readonly text: Channel;
  readonly member: Member;
  readonly herald: HeraldProcess;
}

/** The cold runs of both modes, in ms, in the order they ran (run i of each mode back to back). */
export interface DaveCostRuns {
  readonly dave: number[];
  readonly declined: number[];
  /** Cold DAVE runs whose first packet the members could decrypt (end-to-end encrypted). */
  readonly firstPacketsE2ee: number;
}

async function openWorld(dave: boolean, caPath: string, dir: string): Promise<World> {
  const [discord, tts] = await Promise.all([startDiscordEmulator({ dave }), startTtsEmulator({ speed: 8 })]);
  const guild = discord.createGuild({ name: dave ? 'DAVE' : 'Declined' });
  const text = guild.addTextChannel('general');
  const lounge = guild.addVoiceChannel('Lounge');
  const member = guild.addMember({ name: 'Mia Member' });
  guild.joinVoice(member, lounge);
  const herald = startHeraldProcess(
    {
      ...heraldEnv(discord, tts, join(dir, `${dave ? 'dave' : 'declined'}.sqlite`)),
      LOG_LEVEL: 'warn',
      NODE_EXTRA_CA_CERTS: caPath,
    },
    [],
    dir,
  );
  await herald.untilReady(discord.untilReady());
  return { discord, tts, guild, text, member, herald };
}

async function closeWorld(world: World | undefined): Promise<void> {
  if (!world) return;
  await world.herald.stop();
  await Promise.all([world.discord.close(), world.tts.close()]);
}

/** One cold `/speak`: ms to the first voice packet; Herald then leaves and the call settles. */
async function coldRun(world: World, i: number): Promise<{ ms: number; e2ee: boolean }> {
  const capture = world.discord.voice(world.guild);
  capture.clear();
  const start = performance.now();
  const reply = world.discord.slash(
    world.member,
    'speak',
    { text: `Cold start number ${i}.` },
    { channel: world.text, timeoutMs: 30_000 },
  );
  await capture.untilFrames(1, { timeoutMs: 30_000 });
  const first = capture.frames.find((frame) => !frame.silence);
  const ms = (first?.receivedAt ?? performance.now()) - start;
  await reply;
  await capture.untilSilent({ quietMs: 300 });
  await world.discord.slash(world.member, 'leave', {}, { channel: world.text });
  await capture.untilDisconnected();
  // The members' group re-keys without Herald before the next cold join.
  await new Promise((resolve) => setTimeout(resolve, 300));
  return { ms, e2ee: first?.e2ee === true };
}

/** Runs `runs` cold /speak in each mode, alternately, with Herald in a process of its own. */
export async function measureDaveCost(runs: number, progress: (line: string) => void): Promise<DaveCostRuns> {
  const dir = mkdtempSync(join(tmpdir(), 'herald-dave-cost-'));
  const caPath = join(dir, 'ca.pem');
  writeFileSync(caPath, (await trustedTestCertificate()).cert);
  let dave: World | undefined;
  let declined: World | undefined;
  const result = { dave: [] as number[], declined: [] as number[], firstPacketsE2ee: 0 };
  try {
    [dave, declined] = await Promise.all([openWorld(true, caPath, dir), openWorld(false, caPath, dir)]);
    // A first join in each warms both processes (module loading, the first TLS handshake, davey's first session).
    await coldRun(dave, -1);
    await coldRun(declined, -1);
    for (let i = 0; i < runs; i++) {
      const withDave = await coldRun(dave, i);
      result.dave.push(withDave.ms);
      if (withDave.e2ee) result.firstPacketsE2ee += 1;
      result.declined.push((await coldRun(declined, i)).ms);
      progress(
        `  run ${i + 1}/${runs}: DAVE ${withDave.ms.toFixed(1)} ms, declined ${result.declined.at(-1)?.toFixed(1)} ms`,
      );
    }
    return result;
  } finally {
    await Promise.all([closeWorld(dave), closeWorld(declined)]);
    rmSync(dir, { recursive: true, force: true });
  }
}
