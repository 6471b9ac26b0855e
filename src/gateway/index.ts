/**
 * The gateway beyond discord.js's own handling: how this process's shards log in to Discord alongside the bot's
 * other processes.
 */
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
