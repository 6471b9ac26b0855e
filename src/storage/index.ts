/**
 * Settings storage. Commands and the domain see only {@link SettingsStore}; SQLite is the one implementation
 * today, and the interface is asynchronous so a PostgreSQL store can be added without touching callers.
 */

/** A server's settings; reads of a server never configured return {@link defaultGuildSettings}. */
export interface GuildSettings {
  readonly guildId: string;
  /** The speaker id admins chose for the server, or null for "not chosen". */
  readonly defaultSpeakerId: string | null;
}

/** The settings of a server nobody configured. */
export function defaultGuildSettings(guildId: string): GuildSettings {
  return { guildId, defaultSpeakerId: null };
}

/** Where Herald keeps what server admins and members configured. Every write is durable when it resolves. */
export interface SettingsStore {
  guild(guildId: string): Promise<GuildSettings>;
  setGuildSpeaker(guildId: string, speakerId: string | null): Promise<void>;
  /** The member's own voice in a server, or null. */
  memberSpeaker(guildId: string, userId: string): Promise<string | null>;
  setMemberSpeaker(guildId: string, userId: string, speakerId: string | null): Promise<void>;
  close(): void;
}
