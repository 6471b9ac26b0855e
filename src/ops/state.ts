import type { BudgetStatus, LedgerEntry } from '../budget/index.ts';

/** One server where Herald is in voice, as the status page and the gauges see it (names, never member ids). */
export interface SessionView {
  readonly guildId: string;
  readonly guildName: string;
  readonly channelName: string;
  /** Utterances waiting or playing. */
  readonly queueDepth: number;
  /** The voice connection's status (`ready`, `signalling`, …). */
  readonly connection: string;
  /** The audio player's status (`playing`, `idle`, …). */
  readonly player: string;
  /** The shard whose process holds it (the sharding manager's page); absent in one process. */
  readonly shard?: number;
}

/** A warning or error Herald logged, for the status page. */
export interface RecentProblem {
  /** Ms since the epoch. */
  readonly at: number;
  readonly level: 'warn' | 'error';
  readonly message: string;
  /** The error's type and message, when the line carried one (already scrubbed of secrets by the logger). */
  readonly detail: string | undefined;
  /** Who logged it (the sharding manager's page): a shard, or the manager itself; absent in one process. */
  readonly shard?: number | 'manager';
}

/** What the operations endpoint reads, at the moment it is asked; the composition root supplies each. */
export interface OpsState {
  budget(): BudgetStatus | Promise<BudgetStatus>;
  sessions(): readonly SessionView[];
  gatewayConnected(): boolean;
  /** Ledger rows at or after `since` (ms), oldest first. */
  ledger(since: number): readonly LedgerEntry[] | Promise<readonly LedgerEntry[]>;
  /** The latest warnings and errors, newest first. */
  recentProblems(): readonly RecentProblem[];
  /** The audio cache's files now (zeros when it is off). */
  cache(): { readonly entries: number; readonly bytes: number };
}

/** One shard process as the sharding manager's status page shows it: what it said, or why it said nothing. */
export type ShardView =
  | {
      readonly id: number;
      readonly status: 'answered';
      readonly gatewayConnected: boolean;
      /** Servers where it is in voice. */
      readonly sessions: number;
    }
  | { readonly id: number; readonly status: 'silent'; readonly detail: string }
  /** Waiting for its lease while another Herald runs the shard (`detail`: who). */
  | { readonly id: number; readonly status: 'standing-by'; readonly detail: string };

/** What is happening now, as the status page shows it. */
export interface LiveView {
  readonly sessions: readonly SessionView[];
  /** Newest first. */
  readonly problems: readonly RecentProblem[];
  /** True while every gateway connection (every shard's, on the manager's page) is ready. */
  readonly gatewayConnected: boolean;
  /** Each shard process (the sharding manager's page); absent in one process. */
  readonly shards?: readonly ShardView[];
}

/**
 * What the status page reads when it is asked: one process's {@link OpsState} (see {@link statusOf}), or what the
 * sharding manager gathers from the shared database and every shard.
 */
export interface StatusSource {
  budget(): BudgetStatus | Promise<BudgetStatus>;
  /** Ledger rows at or after `since` (ms), oldest first. */
  ledger(since: number): readonly LedgerEntry[] | Promise<readonly LedgerEntry[]>;
  live(): LiveView | Promise<LiveView>;
}

/** This process's sessions, latest problems and gateway, now. */
export function liveOf(state: OpsState): LiveView {
  return {
    sessions: state.sessions(),
    problems: state.recentProblems(),
    gatewayConnected: state.gatewayConnected(),
  };
}

/** The status page of one process: everything read from its own {@link OpsState}. */
export function statusOf(state: OpsState): StatusSource {
  return { budget: () => state.budget(), ledger: (since) => state.ledger(since), live: () => liveOf(state) };
}
