/**
 * What the DAVE parts of the emulator share: the voice gateway's DAVE opcodes, a DAVE client as the gateway sees
 * it, and the timed events of the DAVE flow (for benchmarks). Opcodes and payloads: /work/shared/dave-facts.md §4.
 */

/** A DAVE client as the gateway sees it: the bot over its websocket, or an in-process listener. */
export interface DaveClient {
  readonly userId: string;
  sendJson(op: number, d: unknown): void;
  sendBinary(op: number, payload: Buffer): void;
}

/** A step of the gateway's DAVE flow, timed for the latency bench's breakdown. */
export interface DaveEvent {
  /** `performance.now()`. */
  readonly at: number;
  readonly channelId: string;
  /**
   * `session` (the voice server sent op 4 to the bot; `step` is `dave` or `declined`), `key-package` (op 26
   * received), `proposals` (op 27 sent to every recipient), `commit` (the round's winning op 28 received; op 29
   * and 30 sent), `ready` (op 23 received), `execute` (op 22 sent), `reset` (sole-member
   * reset sent), `mls` (a member's client finished an MLS operation: `step`, taking `ms`).
   */
  readonly kind: 'session' | 'key-package' | 'proposals' | 'commit' | 'ready' | 'execute' | 'reset' | 'mls';
  readonly userId?: string;
  readonly step?: string;
  readonly ms?: number;
}

/** DAVE opcodes on the voice gateway (https://daveprotocol.com). */
export const DAVE_OP = {
  clientsConnect: 11,
  clientDisconnect: 13,
  prepareTransition: 21,
  executeTransition: 22,
  readyForTransition: 23,
  prepareEpoch: 24,
  externalSender: 25,
  keyPackage: 26,
  proposals: 27,
  commitWelcome: 28,
  announceCommit: 29,
  welcome: 30,
  invalidCommitWelcome: 31,
} as const;
