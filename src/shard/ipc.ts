/**
 * The sharding manager's questions to its shard processes, over the IPC channel discord.js's ShardingManager
 * opens: each shard's Prometheus metrics (as JSON, to be summed into one `/metrics`) and its readiness. Requests
 * carry an id; a shard that does not answer in time counts as not ready.
 */
import type { Shard } from 'discord.js';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { Logger } from '../log.ts';

/** The question, by kind. */
export type Question = 'metrics' | 'readiness';

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

/** What a shard process answers with. */
export interface ShardAnswers {
  metrics(): Promise<ShardMetrics>;
  readiness(): Promise<ShardReadiness>;
}

/**
 * In a shard process: answers the manager's questions. Returns a function that stops answering. Does nothing
 * without an IPC channel (a process not spawned by the manager).
 */
export function answerManager(answers: ShardAnswers, logger: Logger): () => void {
  if (!process.send) return () => {};
  const onMessage = (message: unknown): void => {
    if (!isRequest(message)) return;
    const reply = (answer: Omit<Answer, 'heraldOps' | 'id'>): void => {
      // The channel closes when the manager goes; an answer it will never read is not an error.
      if (process.connected)
        process.send?.({ heraldOps: 'answer', id: message.id, ...answer }, undefined, {}, () => {});
    };
    const work = message.question === 'metrics' ? answers.metrics() : answers.readiness();
    work.then(
      (value) => reply({ value }),
      (error: unknown) => {
        logger.warn('could not answer the sharding manager', { question: message.question, err: error });
        reply({ error: error instanceof Error ? error.message : String(error) });
      },
    );
  };
  process.on('message', onMessage);
  return () => process.off('message', onMessage);
}

let nextId = 0;

/**
 * In the manager: asks one shard process a question. @throws (rejects) when the shard is not running, answers
 * with an error, or does not answer within `timeoutMs`.
 */
export function askShard(shard: Shard, question: 'metrics', timeoutMs: number): Promise<ShardMetrics>;
export function askShard(shard: Shard, question: 'readiness', timeoutMs: number): Promise<ShardReadiness>;
export function askShard(shard: Shard, question: Question, timeoutMs: number): Promise<unknown> {
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
      else resolve(message.value);
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
