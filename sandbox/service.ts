/**
 * The service panel: the emulated TTS account as the page shows and changes it (balance, price, injected faults,
 * the ledger of requests), or, with a real service, only where it is and Herald's floor.
 */
import { expectedDurationMs, type Fault, type TtsEmulator } from '../emulators/tts/index.ts';
import type { BudgetStore } from '../src/budget/index.ts';
import { BadRequest } from './http.ts';

/** The panel's figures, as sent to the page. */
export type ServiceView =
  | {
      readonly kind: 'emulated';
      readonly balanceUsd: number;
      readonly pricePerCharUsd: number;
      readonly floorUsd: number;
      readonly chargedUsd: number;
      /** The voices and their tones, so the page can name what it hears. */
      readonly speakers: { id: string; name: string; toneHz: number }[];
      readonly injected: readonly { label: string; at: number }[];
      /** Generate requests, newest first. */
      readonly ledger: LedgerRow[];
    }
  | {
      readonly kind: 'real';
      readonly host: string;
      readonly floorUsd: number;
      /** The balance as Herald last saw it (`X-Balance-USD`), null before the first generation. */
      readonly balanceUsd: number | null;
      /** Why Herald stopped spending, null while it speaks. */
      readonly blocked: string | null;
      /** Herald's own ledger, newest first: the real service's charges are known only from its headers. */
      readonly ledger: {
        at: number;
        userId: string;
        characters: number;
        costUsd: number | null;
        balanceAfterUsd: number | null;
      }[];
    };

/** One generate request as the emulated service saw it. */
export interface LedgerRow {
  readonly at: number;
  /** HTTP status sent; 0 while the head is not written. */
  readonly status: number;
  readonly chargedUsd: number;
  readonly characters: number;
  /** How long the emulator's audio for it lasts (it speaks at a fixed rate), to match what the page heard. */
  readonly audioMs: number;
  readonly text: string;
  readonly speaker: string;
  readonly requestId: string;
}

/** The panel of one sandbox. */
export interface ServicePanel {
  view(): ServiceView;
  /** Top up, drain, set the price, or inject a fault. @throws BadRequest for a real service or bad input. */
  act(body: Record<string, unknown>): void;
  close(): void;
}

/** The faults the page offers, each for the next generate request. */
export const FAULTS: Readonly<Record<string, { label: string; fault: Fault }>> = {
  latency: { label: '3 s latency', fault: { kind: 'delay-headers', ms: 3000 } },
  '429': { label: '429 rate limited', fault: { kind: 'status', status: 429, retryAfter: '2' } },
  '503': { label: '503 unavailable', fault: { kind: 'status', status: 503 } },
  '402': {
    label: '402 out of credit',
    fault: {
      kind: 'status',
      status: 402,
      body: { error: { code: 'insufficient_balance', message: 'Insufficient balance' } },
    },
  },
  slow: { label: 'half real time', fault: { kind: 'slow', speed: 0.5 } },
  'slows-down': {
    label: 'slows down after 1 s',
    fault: { kind: 'slow', speed: 0.5, afterMs: 1_000 },
  },
  stall: { label: 'stall mid-stream', fault: { kind: 'stall', afterBytes: 400, ms: 30_000 } },
  reset: { label: 'connection reset', fault: { kind: 'reset', afterBytes: 400 } },
  'ends-early': { label: 'ends cleanly at half', fault: { kind: 'truncate', fraction: 0.5 } },
};

const LEDGER_ROWS = 50;

/** The panel of the emulated service `tts`, whose price starts at `pricePerCharUsd`. */
export function createEmulatedServicePanel(
  tts: TtsEmulator,
  o: { pricePerCharUsd: number; floorUsd: number },
): ServicePanel {
  let pricePerCharUsd = o.pricePerCharUsd;
  const injected: { label: string; at: number }[] = [];
  return {
    view: () => ({
      kind: 'emulated',
      balanceUsd: tts.balanceUsd,
      pricePerCharUsd,
      floorUsd: o.floorUsd,
      chargedUsd: tts.totalChargedUsd(),
      speakers: tts.speakers.map((s) => ({ id: s.id, name: s.name, toneHz: s.toneHz })),
      injected,
      ledger: tts.requests
        .filter((r) => r.path.endsWith('/speech/generate'))
        .slice(-LEDGER_ROWS)
        .reverse()
        .map((r) => {
          const body = (typeof r.body === 'object' && r.body !== null ? r.body : {}) as Record<
            string,
            unknown
          >;
          const text = typeof body.text === 'string' ? body.text : '';
          return {
            at: r.receivedAt,
            status: r.status,
            chargedUsd: r.chargedUsd,
            characters: [...text].length,
            audioMs: expectedDurationMs(text),
            text: text.length > 60 ? `${text.slice(0, 59)}…` : text,
            speaker: tts.speakers.find((s) => s.id === body.speaker_id)?.name ?? '',
            requestId: r.requestId,
          };
        }),
    }),
    act(body) {
      const usd = Number(body.usd);
      switch (body.action) {
        case 'top-up':
          tts.balanceUsd += Number.isFinite(usd) && usd > 0 ? usd : 5;
          return;
        case 'drain':
          tts.balanceUsd = 0;
          return;
        case 'price':
          if (!(Number.isFinite(usd) && usd >= 0 && usd <= 1))
            throw new BadRequest('the price must be 0 to 1');
          pricePerCharUsd = usd;
          tts.configure({ pricePerCharUsd: usd });
          return;
        case 'fault': {
          const chosen = FAULTS[String(body.fault)];
          if (!chosen) throw new BadRequest('unknown fault');
          tts.inject(chosen.fault);
          injected.unshift({ label: chosen.label, at: Date.now() });
          injected.splice(10);
          return;
        }
        default:
          throw new BadRequest('unknown service action');
      }
    },
    close() {},
  };
}

/**
 * The panel of a real service: its host only (a base URL could carry credentials; the key never leaves), and
 * what Herald's budget store knows, read through `ledger` (a second connection to Herald's database). The store
 * is asynchronous, so the panel shows what the last read found and reads again each time it is shown.
 */
export function createRealServicePanel(
  baseUrl: string,
  floorUsd: number,
  ledger: BudgetStore,
  close: () => Promise<void>,
): ServicePanel {
  let host = 'the configured service';
  try {
    host = new URL(baseUrl).host;
  } catch {
    // Herald's config already refused an unparsable URL; the panel just says less.
  }
  let seen: ServiceView = { kind: 'real', host, floorUsd, balanceUsd: null, blocked: null, ledger: [] };
  let reading = false;
  const refresh = async (): Promise<void> => {
    if (reading) return;
    reading = true;
    try {
      const [account, rows] = await Promise.all([ledger.account(), ledger.ledger()]);
      seen = {
        kind: 'real',
        host,
        floorUsd,
        balanceUsd: account.balanceUsd,
        blocked: account.blockedReason,
        ledger: rows
          .slice(-LEDGER_ROWS)
          .reverse()
          .map((row) => ({
            at: row.at,
            userId: row.userId,
            characters: row.characters,
            costUsd: row.costUsd,
            balanceAfterUsd: row.balanceAfterUsd,
          })),
      };
    } catch {
      // The last figures stay on the page; the next view reads again.
    } finally {
      reading = false;
    }
  };
  void refresh();
  return {
    view: () => {
      void refresh();
      return seen;
    },
    act() {
      throw new BadRequest('the real TTS service cannot be changed from here');
    },
    close: () => void close().catch(() => {}),
  };
}
