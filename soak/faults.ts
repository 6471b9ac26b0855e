/**
 * The soak's faults, from both emulators, chosen by the seeded generator. Each fault that Herald answers with a
 * bounded wait (a rejoin, a TTS timeout, a gateway resume) excuses the silence of the servers it touches for that
 * long; nothing excuses a server stuck for longer (see tracker.ts).
 */
import type { DiscordEmulator } from '../emulators/discord/index.ts';
import type { Fault, TtsEmulator } from '../emulators/tts/index.ts';
import type { Random } from './prng.ts';
import type { SoakServer } from './servers.ts';
import type { Tracker } from './tracker.ts';

/** Every fault the soak injects, and how often relative to the others. */
export const FAULT_WEIGHTS = {
  'gateway-reconnect': 1,
  'gateway-invalid-resumable': 1,
  'gateway-invalid-session': 0.5,
  'voice-close-4006': 1.5,
  'voice-close-4014': 0.7,
  'voice-close-4015': 1.5,
  'udp-loss': 1.5,
  'dave-rekey': 1,
  'admin-move': 0.7,
  'admin-kick': 0.5,
  'tts-429': 1.5,
  'tts-503': 1.5,
  'tts-402': 0.3,
  'tts-stall': 1,
  'tts-stall-timeout': 0.7,
  'tts-reset': 1,
  'tts-truncated': 1,
  'tts-slow-headers': 1,
  'tts-slow-stream': 1,
  'tts-slows-down': 1,
} as const;

/**
 * With Herald on PostgreSQL, the database goes away too (its server stopped, as a restart or a failover does,
 * for 3–9 s, every client cut off): one outage in about forty faults.
 */
const DATABASE_OUTAGE_WEIGHT = 0.5;

/** A kind of fault the soak injects (member moves that change Herald's DAVE group count as `dave-rekey` too). */
export type FaultKind = keyof typeof FAULT_WEIGHTS | 'database-outage';

/** A database the soak can take away and bring back (test/support/postgres.ts). */
export interface Outage {
  halt(): Promise<void>;
  resume(): Promise<void>;
}

const TTS_FAULTS: Partial<Record<FaultKind, Fault>> = {
  'tts-429': { kind: 'status', status: 429, body: { error: { code: 'rate_limited', message: 'Slow down' } } },
  'tts-503': { kind: 'status', status: 503 },
  'tts-402': {
    kind: 'status',
    status: 402,
    body: { error: { code: 'insufficient_balance', message: 'Top up' } },
  },
  'tts-stall': { kind: 'stall', afterBytes: 2_000, ms: 2_000 },
  // Longer than Herald's 10 s idle timeout: the stream is given up and the member told.
  'tts-stall-timeout': { kind: 'stall', afterBytes: 2_000, ms: 15_000 },
  'tts-reset': { kind: 'reset', afterBytes: 3_000 },
  'tts-truncated': { kind: 'truncate', afterBytes: 3_000 },
  'tts-slow-headers': { kind: 'delay-headers', ms: 3_000 },
  // Slower than real time: Herald holds the start until the clip can play through.
  'tts-slow-stream': { kind: 'slow', speed: 0.5 },
  // Slower than real time after its first second: Herald runs dry once, then holds the rest until it can play on.
  'tts-slows-down': { kind: 'slow', speed: 0.5, afterMs: 1_000 },
};

/** Options of {@link createFaults}. */
export interface FaultOptions {
  readonly discord: DiscordEmulator;
  readonly tts: TtsEmulator;
  readonly servers: readonly SoakServer[];
  readonly random: Random;
  readonly tracker: Tracker;
  readonly hinderMs: number;
  readonly log: (line: string) => void;
  /** Herald's database, when the soak may stop it (PostgreSQL). */
  readonly database?: Outage | undefined;
}

/** The fault injector: `inject` one now, `tick` to follow what the faults did. */
export function createFaults(options: FaultOptions) {
  const { discord, tts, servers, random, tracker, hinderMs } = options;
  const counts: Partial<Record<FaultKind, number>> = {};
  const count = (kind: FaultKind): void => {
    counts[kind] = (counts[kind] ?? 0) + 1;
  };
  let gatewayDown = false;
  let scanned = 0;
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, run: () => void): void => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      run();
    }, ms);
    timers.add(timer);
  };

  const gateway = (now: number, act: () => void): void => {
    gatewayDown = true;
    tracker.hinder('all', Number.POSITIVE_INFINITY);
    const restored = discord.untilSessionRestored({ timeoutMs: 60_000 });
    act();
    restored
      .catch((error: unknown) => options.log(`gateway did not come back: ${String(error)}`))
      .finally(() => {
        for (const server of tracker.servers) server.hinderedUntil = Date.now() + hinderMs;
        // Commands wait a moment more: discord.js replays the guilds after a fresh identify.
        later(2_000, () => {
          gatewayDown = false;
        });
        void now;
      });
  };

  let databaseDown = false;
  const weights: Partial<Record<FaultKind, number>> = options.database
    ? { ...FAULT_WEIGHTS, 'database-outage': DATABASE_OUTAGE_WEIGHT }
    : FAULT_WEIGHTS;
  // Every server waits while the database is away, and for Herald's bounded waits after it is back.
  const outage = (database: Outage): void => {
    if (databaseDown) return;
    databaseDown = true;
    count('database-outage');
    const downMs = 3_000 + random.int(6_000);
    tracker.hinder('all', Number.POSITIVE_INFINITY);
    database
      .halt()
      .then(
        () => new Promise<void>((resolve) => later(downMs, resolve)),
        (error: unknown) => options.log(`the database did not stop: ${String(error)}`),
      )
      .then(() => database.resume())
      .catch((error: unknown) => options.log(`the database did not come back: ${String(error)}`))
      .finally(() => {
        for (const server of tracker.servers) server.hinderedUntil = Date.now() + hinderMs;
        databaseDown = false;
      });
  };

  const inject = (now: number): void => {
    const kind = random.weighted(weights as Record<FaultKind, number>);
    if (kind === 'database-outage') {
      if (options.database) outage(options.database);
      return;
    }
    const tts_ = TTS_FAULTS[kind];
    if (tts_) {
      tts.inject(tts_);
      count(kind);
      return;
    }
    if (kind.startsWith('gateway-')) {
      if (gatewayDown) return;
      count(kind);
      gateway(now, () => {
        if (kind === 'gateway-reconnect') discord.faults.reconnectGateway();
        else discord.faults.invalidateSession(kind === 'gateway-invalid-resumable');
      });
      return;
    }
    // Voice faults need a server where Herald is in voice.
    const inVoice = servers.filter((server) => server.guild.botVoiceChannelId() !== null);
    if (inVoice.length === 0) return;
    const server = random.pick(inVoice);
    const herald = server.guild.botVoiceChannelId();
    count(kind);
    tracker.hinder(server.index, now + hinderMs);
    switch (kind) {
      case 'voice-close-4006':
        discord.faults.closeVoice(server.guild, 4006);
        break;
      case 'voice-close-4014':
        discord.faults.closeVoice(server.guild, 4014);
        break;
      case 'voice-close-4015':
        discord.faults.closeVoice(server.guild, 4015);
        break;
      case 'udp-loss':
        discord.faults.loseVoicePackets(server.guild, 0.1);
        later(20_000, () => discord.faults.loseVoicePackets(server.guild, 0));
        break;
      case 'dave-rekey': {
        // Someone joins Herald's call (a new MLS epoch), or leaves it if two or more listen.
        const channel = herald === server.lounge.id ? server.lounge : server.stage;
        const outside = server.members.find(
          (member) => !server.guild.voiceMembers(channel).includes(member.id),
        );
        if (outside) server.place(outside, channel);
        break;
      }
      case 'admin-move': {
        const to = herald === server.lounge.id ? server.stage : server.lounge;
        server.place(random.pick(server.members), to);
        server.guild.moveBot(to);
        break;
      }
      case 'admin-kick':
        server.guild.moveBot(null);
        break;
      default:
        break;
    }
  };

  return {
    inject,
    gatewayDown: () => gatewayDown,
    /** The database is away (or coming back). */
    databaseDown: () => databaseDown,
    /** Counts a fault injected elsewhere (a member move that re-keys Herald's DAVE group). */
    count,
    /** A TTS request that took a fault excuses its server's silence while Herald's timeouts run. */
    tick(now: number): void {
      const requests = tts.requests;
      for (; scanned < requests.length; scanned++) {
        const request = requests[scanned];
        if (!request || request.faults.length === 0) continue;
        const text = (request.body as { text?: unknown } | undefined)?.text;
        const guild = typeof text === 'string' ? /g(\d+)x\d+/.exec(text)?.[1] : undefined;
        if (guild !== undefined && Number(guild) < servers.length)
          tracker.hinder(Number(guild), now + hinderMs);
        else tracker.hinder('all', now + 5_000);
      }
    },
    counts: () => ({ ...counts }),
    total: () => Object.values(counts).reduce((sum, n) => sum + (n ?? 0), 0),
    close(): void {
      for (const timer of timers) clearTimeout(timer);
    },
  };
}
