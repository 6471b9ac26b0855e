/**
 * The gateway beyond discord.js's own handling: how this process's shards log in to Discord alongside the bot's
 * other processes (a shared IDENTIFY throttle), and each shard's session kept in the database so that a restart
 * RESUMEs (docs/gateway-sessions.md).
 */

export { createGatewaySessions, type GatewaySessions } from './gateway-sessions.ts';
export {
  createSharedIdentifyThrottler,
  type GatewayInformationSource,
  IDENTIFY_RETRY_MS,
  type IdentifyDependencies,
  type IdentifyThrottler,
  type IdentifyThrottlerOption,
  identifyThrottlerOptions,
  type SharedIdentifyThrottlerOptions,
  sharesIdentifyBuckets,
} from './identify.ts';
export {
  createIdentifySlots,
  IDENTIFY_WINDOW_MS,
  type IdentifyClaimant,
  type IdentifySlot,
  type IdentifySlots,
} from './identify-slots.ts';
export { DEFAULT_RESUME_WINDOW_MS, resumableShards } from './resumable.ts';
export { DEFAULT_FLUSH_EVERY_MS, type SessionKeeperOptions } from './sessions.ts';
export type { GatewaySession, GatewaySessionStore, StoredGatewaySession } from './store.ts';
export { createGatewaySessionStore, whyNotResumable } from './store.ts';
