/**
 * The soak's members at work: at random, at rates per second for 50 servers (scaled with their number), `/speak`
 * (tracked from the answer to what was heard), messages in the channel Herald reads aloud, `/skip`, `/stop`,
 * `/join`, `/leave`, members moving between voice channels, and faults. Commands of one server go one at a time.
 */
import type { DiscordEmulator } from '../emulators/discord/index.ts';
import type { createFaults } from './faults.ts';
import type { Random } from './prng.ts';
import type { SoakServer } from './servers.ts';
import { SOAK_SPEAKERS } from './tones.ts';
import type { Tracker } from './tracker.ts';

/** Options of {@link createTraffic}. */
export interface TrafficOptions {
  readonly discord: DiscordEmulator;
  readonly servers: readonly SoakServer[];
  readonly random: Random;
  readonly tracker: Tracker;
  readonly faults: ReturnType<typeof createFaults>;
  /** Where a command that failed outright is reported. */
  readonly violations: string[];
  /** Mean seconds between two faults at 50 servers. */
  readonly faultEverySeconds: number;
}

/** The traffic generator: `act` once a tick of `tickMs`; `counts` says what it did. */
export function createTraffic(options: TrafficOptions) {
  const { discord, servers, random, tracker, faults, violations } = options;
  const scale = servers.length / 50;
  const commandCounts: Record<string, number> = {};
  let autoreadMessages = 0;
  let voiceMoves = 0;
  let serial = 0;

  const command = (server: SoakServer, name: string, run: () => Promise<void>): void => {
    server.busy = true;
    commandCounts[name] = (commandCounts[name] ?? 0) + 1;
    run()
      .catch((error: unknown) => violations.push(`/${name} in server ${server.index}: ${String(error)}`))
      .finally(() => {
        server.busy = false;
      });
  };

  const speak = (server: SoakServer): void => {
    const member = random.chance(0.85) ? server.inVoiceMember(random) : random.pick(server.members);
    if (!member) return;
    serial += 1;
    const tag = `g${server.index}x${serial}`;
    server.toneTurn = (server.toneTurn % (SOAK_SPEAKERS.length - 1)) + 1;
    const speaker = SOAK_SPEAKERS[server.toneTurn] ?? SOAK_SPEAKERS[1];
    const text = `${tag} ${words(random, 3 + random.int(10))}`;
    command(server, 'speak', async () => {
      const item = tracker.sent({
        guild: server.index,
        tag,
        tone: speaker?.toneHz ?? 0,
        sentAt: Date.now(),
        followUps: () => 0,
        refusal: undefined,
      });
      let reply: Awaited<ReturnType<typeof discord.slash>>;
      try {
        reply = await discord.slash(
          member,
          'speak',
          { text, speaker: speaker?.name ?? '' },
          { timeoutMs: 20_000 },
        );
      } catch (error) {
        tracker.unanswered(item, Date.now());
        violations.push(`/speak ${tag} got no answer: ${String(error)}`);
        return;
      }
      const now = Date.now();
      const joining = /^Joining your channel, about (\d+) s/.exec(reply.content);
      if (joining || /^(Speaking now|Queued at position)/.test(reply.content)) {
        item.followUps = () => reply.followUps().length;
        tracker.accepted(item, now);
        if (joining) tracker.hinder(server.index, now + (Number(joining[1]) + 15) * 1000);
      } else {
        tracker.refused(item, refusalKind(reply.content), now);
      }
    });
  };

  const actions = {
    speak: 2.0,
    message: 0.8,
    skip: 0.08,
    stop: 0.04,
    join: 0.04,
    leave: 0.03,
    move: 0.25,
    fault: 1 / options.faultEverySeconds,
  } as const;

  return {
    /** Whatever the members do in a tick of `tickMs` ending at `now`. */
    act(now: number, tickMs: number): void {
      const dt = (tickMs / 1000) * scale;
      for (const [action, rate] of Object.entries(actions) as [keyof typeof actions, number][]) {
        if (!random.chance(rate * dt)) continue;
        const server = random.pick(servers);
        if (action === 'fault') {
          faults.inject(now);
          continue;
        }
        if (action === 'move') {
          voiceMoves += server.moveSomeone(random, faults.count);
          continue;
        }
        if (action === 'message') {
          const member = server.inVoiceMember(random);
          if (!member) continue;
          serial += 1;
          discord.sendMessage(
            member,
            server.text,
            `g${server.index}x${serial} ${words(random, 2 + random.int(8))}`,
          );
          autoreadMessages += 1;
          continue;
        }
        if (server.busy) continue;
        if (action === 'speak') speak(server);
        else {
          const member = server.inVoiceMember(random) ?? random.pick(server.members);
          command(server, action, async () => {
            const sentAt = Date.now();
            const reply = await discord.slash(member, action, {}, { timeoutMs: 20_000 });
            const at = Date.now();
            if (action === 'skip' && /^Skipped/.test(reply.content)) tracker.skipped(server.index, at);
            if (
              (action === 'stop' && /^Stopped/.test(reply.content)) ||
              (action === 'leave' && /^Left/.test(reply.content))
            ) {
              tracker.cleared(server.index, sentAt, at);
            }
          });
        }
      }
    },
    counts: () => ({ commands: { ...commandCounts }, autoreadMessages, voiceMoves }),
  };
}

/** A refusal's reason in a few words, for counting. */
function refusalKind(content: string): string {
  if (/Join a voice channel first/.test(content)) return 'not in voice';
  if (/already speaking in/.test(content)) return 'in another channel';
  if (/queue is full|messages waiting/.test(content)) return 'queue full';
  if (/floor|budget|balance|spending/i.test(content)) return 'budget';
  if (/rate|too fast|per minute/i.test(content)) return 'rate';
  return content.slice(0, 50);
}

const WORDS = [
  'hello',
  'there',
  'the',
  'quick',
  'brown',
  'fox',
  'soak',
  'test',
  'is',
  'running',
  'again',
  'and',
  'now',
];
function words(random: Random, n: number): string {
  return Array.from({ length: n }, () => random.pick(WORDS)).join(' ');
}
