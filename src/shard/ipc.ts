/**
 * The sharding manager's questions to its shard processes, over the IPC channel discord.js's ShardingManager
 * opens: each shard's Prometheus metrics (as JSON, to be summed into one `/metrics`), its readiness, and what its
 * status page would show live (voice sessions, latest problems, gateway). Requests carry an id; a shard that does
 * not answer in time counts as not ready, and shows on the manager's status page as not answering.
 */
import type { Shard } from 'discord.js';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { Logger } from '../log.ts';
import type { LiveView } from '../ops/state.ts';

/** One shard's metrics as prom-client's `getMetricsAsJSON()` gives them. */
export type ShardMetrics = MetricObjectWithValues<MetricValue<string>>[];

/** One shard's readiness, as its own `/readyz` would answer. */
export interface ShardReadiness {
  readonly ready: boolean;
  /** Why not, when the shard could not be asked. */
  readonly detail?: string;
  /** Each check, as in `/readyz`. */
  readonly checks?: unknown;
}

/** One shard's live state for the manager's status page, as its own page would show it. */
export type ShardStatus = Pick<LiveView, 'sessions' | 'problems' | 'gatewayConnected'>;

/** Each question, with what a shard answers to it. */
export interface Answers {
  readonly metrics: ShardMetrics;
  readonly readiness: ShardReadiness;
  readonly status: ShardStatus;
}

/** The question, by kind. */
export type Question = keyof Answers;

interface Request {
  readonly heraldOps: 'ask';
  readonly id: number;
  readonly question: Question;
}

interface Answer {
  readonly heraldOps: 'answer';
  readonly id: number;
  readonly value?: unknown;
  readonly error?: string;
}

const isRequest = (message: unknown): message is Request =>
  typeof message === 'object' && message !== null && (message as Request).heraldOps === 'ask';
const isAnswer = (message: unknown): message is Answer =>
  typeof message === 'object' && message !== null && (message as Answer).heraldOps === 'answer';

/** What a shard process answers with: one function per question. */
export type ShardAnswers = { readonly [Q in Question]: () => Promise<Answers[Q]> };

/** The end of the IPC channel a shard process listens on: `process` itself, unless a test gives another. */
export interface ManagerChannel {
  send?: NodeJS.Process['send'];
  readonly connected: boolean;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  off(event: 'message', listener: (message: unknown) => void): unknown;
}

/**
 * In a shard process: answers the manager's questions. Returns a function that stops answering. Does nothing
 * without an IPC channel (a process not spawned by the manager).
 */
export function answerManager(
  answers: ShardAnswers,
  logger: Logger,
  channel: ManagerChannel = process,
): () => void {
  if (!channel.send) return () => {};
  const onMessage = (message: unknown): void => {
    if (!isRequest(message)) return;
    const reply = (answer: Omit<Answer, 'heraldOps' | 'id'>): void => {
      // The channel closes when the manager goes; an answer it will never read is not an error.
      if (channel.connected)
        channel.send?.({ heraldOps: 'answer', id: message.id, ...answer }, undefined, {}, () => {});
    };
    // A manager newer than this shard may ask what it cannot answer: it says so rather than staying silent.
    const known = Object.hasOwn(answers, message.question);
    const work = known
      ? answers[message.question]()
      : Promise.reject(new Error(`unknown question ${String(message.question)}`));
    work.then(
      (value) => reply({ value }),
      (error: unknown) => {
        logger.warn('could not answer the sharding manager', { question: message.question, err: error });
        reply({ error: error instanceof Error ? error.message : String(error) });
      },
    );
  };
  channel.on('message', onMessage);
  return () => channel.off('message', onMessage);
}

let nextId = 0;

/**
 * In the manager: asks one shard process a question. @throws (rejects) when the shard is not running, answers
 * with an error, or does not answer within `timeoutMs`.
 */
export function askShard<Q extends Question>(
  shard: AskedShard,
  question: Q,
  timeoutMs: number,
): Promise<Answers[Q]> {
  if (!shard.process) return Promise.reject(new Error(`shard ${shard.id} is not running`));
  nextId += 1;
  const id = nextId;
  return new Promise((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      shard.off('message', onMessage);
      shard.off('death', onDeath);
    };
    const onMessage = (message: unknown): void => {
      if (!isAnswer(message) || message.id !== id) return;
      done();
      if (message.error !== undefined) reject(new Error(`shard ${shard.id}: ${message.error}`));
      // The shard is Herald's own child process, on the same commit: its answer has the question's shape.
      else resolve(message.value as Answers[Q]);
    };
    const onDeath = (): void => {
      done();
      reject(new Error(`shard ${shard.id} exited`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`shard ${shard.id} did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    shard.on('message', onMessage);
    shard.on('death', onDeath);
    shard.send({ heraldOps: 'ask', id, question } satisfies Request).catch((error: unknown) => {
      done();
      reject(error);
    });
  });
}

/** The part of a discord.js `Shard` the manager asks through (a test gives a fake). */
export type AskedShard = Pick<Shard, 'id' | 'process' | 'send' | 'on' | 'off'>;

/** One shard's answer to a question, or why there is none. */
export type ShardReply<T> =
  | { readonly id: number; readonly ok: true; readonly value: T }
  | { readonly id: number; readonly ok: false; readonly detail: string };

/**
 * Asks every shard of `ids` at once; each reply in the order of `ids`, within `timeoutMs`. Never rejects: a shard
 * whose process is not running, that answers with an error, or that stays silent is a reply saying so.
 */
export function askEach<Q extends Question>(
  shards: { get(id: number): AskedShard | undefined },
  ids: readonly number[],
  question: Q,
  timeoutMs: number,
): Promise<ShardReply<Answers[Q]>[]> {
  return Promise.all(
    ids.map(async (id): Promise<ShardReply<Answers[Q]>> => {
      const shard = shards.get(id);
      if (!shard?.process) return { id, ok: false, detail: 'The shard process is not running.' };
      try {
        return { id, ok: true, value: await askShard(shard, question, timeoutMs) };
      } catch (error) {
        return { id, ok: false, detail: error instanceof Error ? error.message : String(error) };
      }
    }),
  );
}
