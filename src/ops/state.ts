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
}

/** A warning or error Herald logged, for the status page. */
export interface RecentProblem {
  /** Ms since the epoch. */
  readonly at: number;
  readonly level: 'warn' | 'error';
  readonly message: string;
  /** The error's type and message, when the line carried one (already scrubbed of secrets by the logger). */
  readonly detail: string | undefined;
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
