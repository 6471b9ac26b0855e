/**
 * What Herald keeps about a server and about a member, table by table, and what each kind of deletion removes.
 * Every table with a `guild_id` column is named here, as deleted or kept (test/privacy/tables.test.ts fails on a
 * table that is neither): a new table is classified when it is written, not forgotten.
 */

/**
 * A server's own data: its settings and its members' choices there. Deleted when Herald has been out of the server
 * for `DATA_RETENTION_DAYS`.
 */
export const SERVER_TABLES = [
  'guild_settings', // the server's default voice
  'member_settings', // each member's voice
  'guild_voice', // the server's default temperature
  'member_voice', // each member's spoken name and temperature
  'member_dictionary', // the server's pronunciation dictionary
  'member_blocks', // the server's block list
  'autoread_settings', // auto-read's settings
  'autoread_channels', // the channels read aloud
  'autoread_opt_outs', // members who asked not to be read
  'budget_guild', // the server's daily cap and alert channel
  'audio_cache_guild', // whether the server uses the audio cache
  'voice_sessions', // the voice channel and queue a restart would rejoin (the queue holds text)
] as const;

/**
 * Money records, kept whatever happens to the server or the member: the operator's accounting of what the service
 * charged and what the cache saved. Rows hold ids, characters and amounts, never text.
 */
export const KEPT_TABLES = [
  'budget_ledger',
  'budget_reservations', // minutes-long holds of the budget, gone once settled
  'audio_cache_ledger',
] as const;

/**
 * A member's own data in every server, deleted by `/forget-me`: their voice, spoken name and temperature. Kept on
 * purpose: a block list entry naming them (the server's moderators decided it) and their auto-read opt-out (deleting
 * it would start reading their messages aloud again).
 */
export const MEMBER_TABLES = ['member_settings', 'member_voice'] as const;
