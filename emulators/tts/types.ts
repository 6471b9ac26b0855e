/** The emulator's public types (what tests, the sandbox and benchmarks hold and call), and its live settings. */
import type { AudioQuirks } from './audio.ts';
import type { EmulatedSpeaker } from './speakers.ts';

/** Options of {@link startTtsEmulator}. */
export interface TtsEmulatorOptions {
  /** Path prefix of the API; default '/v1'; may be deeper, e.g. '/gateway/tts/v1'. */
  basePath?: string;
  /** The one valid key; default 'ttsemu_live_' + 32 random hex chars. */
  apiKey?: string;
  /** Which form of the generate contract to enforce; default 'current' (opus, temperature allowed). */
  form?: 'current' | 'variant';
  /** Starting account balance in USD; default 10. */
  balanceUsd?: number;
  /** Price per code point in USD; default 0.0001. */
  pricePerCharUsd?: number;
  /** Audio ms per code point; default 40. */
  msPerChar?: number;
  /** Cap on audio length in ms; default 20_000. */
  maxAudioMs?: number;
  /** Realtime factor the audio is written at; default 4 (1 s of audio over 250 ms); Infinity = all at once. */
  speed?: number;
  /**
   * At most one write of audio per this many ms, holding what fell due in between for it (never sending early);
   * default 0, each Ogg page (one 20 ms packet) or WAV chunk written alone as it falls due. On loopback every write
   * wakes the client for a few hundred bytes, where a real network's delivery comes in batches.
   */
  writeEveryMs?: number;
  /**
   * Ms between charging a generation and its response headers leaving: the way back over a real network, when
   * the service has been paid and the client does not know it yet. Default 0.
   */
  chargedLatencyMs?: number;
  /** Audio quirks; default { frameMs: 20, continuedPackets: false, channels: 1 }. */
  audio?: Partial<AudioQuirks>;
  /** Speakers served; default {@link DEFAULT_SPEAKERS}. */
  speakers?: EmulatedSpeaker[];
  /** Port on 127.0.0.1; default 0 (a random free port). */
  port?: number;
}

/** A misbehaviour applied to upcoming requests by {@link TtsEmulator.inject}. */
export type Fault =
  /** Wait `ms` before doing anything (and so before the response headers). */
  | { kind: 'delay-headers'; ms: number }
  /** Answer `status` with `body` (default an error JSON) instead of handling the request; nothing charged. */
  | { kind: 'status'; status: number; body?: string | object; contentType?: string; retryAfter?: string }
  /** Stop writing the body after `afterBytes` for `ms` (Infinity: until the client or the emulator closes). */
  | { kind: 'stall'; afterBytes: number; ms: number }
  /**
   * Stream the audio at `speed` × real time instead of the configured speed (below 1: slower than it plays); with
   * `afterMs`, only the audio after its first `afterMs` (sent at the configured speed): a service that slows down
   * inside an utterance.
   */
  | { kind: 'slow'; speed: number; afterMs?: number }
  /** Destroy the socket after `afterBytes` of body. */
  | { kind: 'reset'; afterBytes: number }
  /**
   * End the response cleanly, no reset, a 200 whose audio stops short (charged in full): after `afterBytes` of
   * body, or at a `fraction` of it (0 to 1) rounded down to whole chunks (Ogg pages, WAV writes), so the body ends
   * on a page boundary without the end-of-stream page; `fraction: 0` sends the headers and then ends.
   */
  | { kind: 'truncate'; afterBytes: number }
  | { kind: 'truncate'; fraction: number }
  /** A success with the wrong content type. */
  | { kind: 'content-type'; contentType: string }
  /**
   * Speakers: a 200 whose body is not JSON ('not-json', default), JSON of the wrong shape ('wrong-shape': an
   * object, not an array) or an array whose items lack fields ('bad-items'). Generate: a 500 with broken JSON.
   */
  | { kind: 'malformed-json'; variant?: 'not-json' | 'wrong-shape' | 'bad-items' }
  /** Override response headers (any, typically X-*); null omits one. */
  | { kind: 'headers'; headers: Record<string, string | null> };

/** One request as the emulator saw it. */
export interface RecordedRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  /** Headers as received (lower-case names; repeated ones joined with ', '). */
  headers: Record<string, string>;
  /** Parsed JSON body; the raw string when it is not JSON; undefined when empty. */
  body: unknown;
  /** Status sent (0 until the response head is written, and for ever if the client left before it). */
  status: number;
  chargedUsd: number;
  requestId: string;
  /** Date.now() when the request arrived. */
  receivedAt: number;
  /**
   * Date.now() when the whole response had been handed to the socket; undefined while it is being written, and for
   * ever when the client left first (e.g. a process killed mid-download: the charge stands, the audio is lost).
   */
  completedAt: number | undefined;
  /** The kinds of the injected faults this request took (empty for an ordinary one). */
  faults: Fault['kind'][];
}

/** A running emulator. */
export interface TtsEmulator {
  /** e.g. http://127.0.0.1:PORT/v1 (with the base path, no trailing slash). */
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly speakers: readonly EmulatedSpeaker[];
  /** Readable and settable (a top-up in a test); rounded to whole micro-dollars, never negative. */
  balanceUsd: number;
  readonly requests: readonly RecordedRequest[];
  /** Applies `fault` to the next `times` (default 1) requests on `route` (default 'generate'). */
  inject(fault: Fault, options?: { times?: number; route?: 'generate' | 'speakers' | 'any' }): void;
  /** Changes settings for requests that arrive from now on. */
  configure(
    options: Partial<
      Pick<
        TtsEmulatorOptions,
        | 'form'
        | 'pricePerCharUsd'
        | 'msPerChar'
        | 'speed'
        | 'writeEveryMs'
        | 'chargedLatencyMs'
        | 'audio'
        | 'speakers'
      >
    >,
  ): void;
  /** Sum charged over all recorded requests, in USD. */
  totalChargedUsd(): number;
  /** Responses not yet finished or abandoned (0 once every client got its body or hung up). */
  openResponses(): number;
  /** Stops listening, ends open streams and connections. */
  close(): Promise<void>;
}

/** The settings in force for requests arriving now: the options with defaults applied, changed by `configure`. */
export interface Settings {
  form: 'current' | 'variant';
  pricePerCharUsd: number;
  msPerChar: number;
  maxAudioMs: number;
  speed: number;
  writeEveryMs: number;
  chargedLatencyMs: number;
  audio: AudioQuirks;
  speakers: EmulatedSpeaker[];
}
