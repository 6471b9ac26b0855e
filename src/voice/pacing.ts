/**
 * When to pay for the next utterance. Herald synthesises the next one only when the one playing is close enough
 * to its end that the next can start without a gap: that lead is the TTS first-byte time, measured, plus a margin.
 * The estimate follows TCP's retransmission timer (RFC 6298): a smoothed mean plus four times the smoothed
 * deviation, so a service whose latency varies gets a wider lead than a steady one.
 */
export interface SynthesisPacing {
  /** Records how long one synthesis took from the call to its response headers. */
  record(ms: number): void;
  /** How long before the end of the utterance playing the next synthesis should start. */
  leadMs(): number;
}

/** Options of {@link createSynthesisPacing}. */
export interface SynthesisPacingOptions {
  /** The lead before anything was measured; default 1,000 ms. */
  readonly initialLeadMs?: number;
  /** Added to the estimate for the first packets to reach the player; default 150 ms. */
  readonly marginMs?: number;
  /** The lead never exceeds this, whatever the service does; default 10 s. */
  readonly maxLeadMs?: number;
}

/** Creates a {@link SynthesisPacing}; one per process is enough (the service is the same for every server). */
export function createSynthesisPacing(options: SynthesisPacingOptions = {}): SynthesisPacing {
  const initialLeadMs = options.initialLeadMs ?? 1_000;
  const marginMs = options.marginMs ?? 150;
  const maxLeadMs = options.maxLeadMs ?? 10_000;
  let smoothed: number | undefined;
  let deviation = 0;
  return {
    record(ms) {
      if (!Number.isFinite(ms) || ms < 0) return;
      if (smoothed === undefined) {
        smoothed = ms;
        deviation = ms / 2;
        return;
      }
      deviation = 0.75 * deviation + 0.25 * Math.abs(smoothed - ms);
      smoothed = 0.875 * smoothed + 0.125 * ms;
    },
    leadMs() {
      if (smoothed === undefined) return initialLeadMs;
      return Math.min(maxLeadMs, Math.round(smoothed + 4 * deviation + marginMs));
    },
  };
}
