import type { Logger } from '../log.ts';
import { formatUsd } from './money.ts';
import type { BlockReason } from './records.ts';
import type { BudgetStore } from './store.ts';

/** Something the operator should hear about; see `describeAlert`. */
export type BudgetAlert =
  | {
      readonly kind: 'warn';
      readonly balanceUsd: number;
      readonly warnUsd: number;
      readonly floorUsd: number;
    }
  | {
      readonly kind: 'blocked';
      readonly reason: BlockReason;
      readonly balanceUsd: number | undefined;
      readonly floorUsd: number;
    }
  | { readonly kind: 'resumed'; readonly balanceUsd: number; readonly floorUsd: number };

/** Options of {@link createBudgetAlerter}. */
export interface BudgetAlerterOptions {
  /** Read for the channels servers configured with `/budget alerts`. */
  readonly store: Pick<BudgetStore, 'alertChannels'>;
  /** `BUDGET_ALERT_CHANNEL_ID`: when set, the only channel alerts go to. */
  readonly alertChannelId: string | undefined;
  /** Posts a message in a text channel (no mentions); rejects when it cannot. */
  readonly send: (channelId: string, content: string) => Promise<void>;
  readonly logger: Logger;
}

/**
 * The guard's `onAlert`: one account pays for every server, so an alert goes to the operator's channel when
 * configured, otherwise to every server's alert channel, otherwise only to the log (the guard logs every alert).
 */
export function createBudgetAlerter(options: BudgetAlerterOptions): (alert: BudgetAlert) => void {
  const post = async (alert: BudgetAlert): Promise<void> => {
    const targets =
      options.alertChannelId === undefined ? await options.store.alertChannels() : [options.alertChannelId];
    const content = describeAlert(alert);
    for (const channelId of targets) {
      options
        .send(channelId, content)
        .catch((error: unknown) =>
          options.logger.warn('could not post a budget alert', { channel: channelId, err: error }),
        );
    }
  };
  return (alert) => {
    post(alert).catch((error: unknown) =>
      options.logger.warn('could not find where to post a budget alert', { err: error }),
    );
  };
}

/** The sentence posted for an alert. */
export function describeAlert(alert: BudgetAlert): string {
  switch (alert.kind) {
    case 'warn':
      return `Herald’s speech budget is running low: the account balance is ${formatUsd(alert.balanceUsd)} (warning level ${formatUsd(alert.warnUsd)}); Herald stops speaking at ${formatUsd(alert.floorUsd)}.`;
    case 'blocked':
      switch (alert.reason) {
        case 'floor-reached':
          return `Herald has stopped speaking: the account balance (${alert.balanceUsd === undefined ? 'unknown' : formatUsd(alert.balanceUsd)}) has reached the floor (${formatUsd(alert.floorUsd)}). After a top-up, the operator can run /budget recheck.`;
        case 'service-refused':
          return `Herald has stopped speaking: the speech service refused a request for lack of credit${alert.balanceUsd === undefined ? '' : ` (balance ${formatUsd(alert.balanceUsd)})`}. Herald checks again by itself every few minutes and resumes after a top-up; the operator can also run /budget recheck.`;
        case 'balance-unknown':
          return `Herald has stopped speaking: the speech service does not report the account balance, so the floor (${formatUsd(alert.floorUsd)}) cannot be checked. Herald checks again by itself every few minutes.`;
      }
      break;
    case 'resumed':
      return `Herald speaks again: the account balance is ${formatUsd(alert.balanceUsd)}, above the floor (${formatUsd(alert.floorUsd)}).`;
  }
}

/** Logs each alert (a resume as info, the rest as warnings), then hands it to `onAlert`, whose failure is logged. */
export function reportAlerts(
  logger: Logger,
  onAlert: ((alert: BudgetAlert) => void) | undefined,
): (alert: BudgetAlert) => void {
  return (event) => {
    if (event.kind === 'resumed') logger.info('budget resumed', { ...event });
    else logger.warn(`budget ${event.kind}`, { ...event });
    try {
      onAlert?.(event);
    } catch (error) {
      logger.error('budget alert handler failed', { err: error });
    }
  };
}
