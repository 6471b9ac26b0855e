/** Why a request may not be spoken, the sentence a member sees for it, and the error that carries it. */
import { formatCount, UserFacingError } from '../discord/member-facing.ts';
import { formatUsd } from './money.ts';
import type { BlockReason } from './records.ts';

/** Why a request may not be spoken; each kind carries what its sentence needs (see {@link describeRefusal}). */
export type BudgetRefusal =
  | {
      readonly kind: 'blocked';
      readonly reason: BlockReason;
      readonly since: number;
      /** The last known balance; undefined when the service never reported one. */
      readonly balanceUsd: number | undefined;
      readonly floorUsd: number;
    }
  | {
      readonly kind: 'would-cross-floor';
      readonly balanceUsd: number;
      /** Already set aside for generations in flight. */
      readonly reservedUsd: number;
      readonly estimateUsd: number;
      readonly floorUsd: number;
    }
  | {
      readonly kind: 'daily-cap';
      readonly guildId: string;
      /** Spent today plus in flight for this server. */
      readonly spentUsd: number;
      readonly estimateUsd: number;
      readonly capUsd: number;
      /** Next UTC midnight, ms since the epoch. */
      readonly resetsAt: number;
    }
  | {
      readonly kind: 'member-rate';
      readonly userId: string;
      /** Characters in the last minute, in flight included. */
      readonly usedCharacters: number;
      readonly characters: number;
      readonly limitPerMinute: number;
      /** How long until this request would fit; undefined when it never can (longer than the limit). */
      readonly retryAfterMs: number | undefined;
    };

/** A refusal as an error, for the voice session's failure path; `describeFailure` shows its message. */
export class BudgetRefusedError extends UserFacingError {
  /** The refusal this error carries. */
  readonly refusal: BudgetRefusal;

  constructor(refusal: BudgetRefusal) {
    super(describeRefusal(refusal));
    this.refusal = refusal;
  }
}

/** The sentence a member sees for a refusal. */
export function describeRefusal(refusal: BudgetRefusal): string {
  switch (refusal.kind) {
    case 'blocked': {
      const balance = refusal.balanceUsd === undefined ? 'unknown' : formatUsd(refusal.balanceUsd);
      if (refusal.reason === 'balance-unknown') {
        return `Herald has stopped speaking: the speech service does not report the account balance, so the floor the operator set (${formatUsd(refusal.floorUsd)}) cannot be checked. Herald checks again by itself; the operator can also run /budget recheck.`;
      }
      return refusal.reason === 'floor-reached'
        ? `Herald has stopped speaking: the account balance (${balance}) has reached the floor the operator set (${formatUsd(refusal.floorUsd)}).`
        : `Herald has stopped speaking: the speech service refused a request for lack of credit (balance ${balance}; the floor the operator set is ${formatUsd(refusal.floorUsd)}). Herald resumes by itself once the operator tops up (it checks again every few minutes).`;
    }
    case 'would-cross-floor': {
      const committed =
        refusal.reservedUsd > 0 ? `, with ${formatUsd(refusal.reservedUsd)} already committed,` : '';
      return `Herald can’t say this: it would cost about ${formatUsd(refusal.estimateUsd)} and take the account balance (${formatUsd(refusal.balanceUsd)}${committed}) below the floor the operator set (${formatUsd(refusal.floorUsd)}). A shorter message may still fit.`;
    }
    case 'daily-cap':
      return `This server has used its daily speech budget: ${formatUsd(refusal.spentUsd)} of ${formatUsd(refusal.capUsd)} spent today (UTC), and this would cost about ${formatUsd(refusal.estimateUsd)}. It resets <t:${Math.floor(refusal.resetsAt / 1000)}:R>.`;
    case 'member-rate': {
      const limit = `${formatCount(refusal.limitPerMinute)} characters a minute`;
      if (refusal.retryAfterMs === undefined) {
        return `That message is ${formatCount(refusal.characters)} characters, more than the ${limit} one member may use. Send a shorter one.`;
      }
      return `You are speaking faster than the ${limit} one member may use (${formatCount(refusal.usedCharacters)} in the last minute). Try again in ${Math.max(1, Math.ceil(refusal.retryAfterMs / 1000))} s.`;
    }
  }
}
