import type { Database } from '../storage/database.ts';

/**
 * Auto-read settings: which text channels a server has Herald read aloud, how, and which members opted out.
 * They live in the same database as the server's other settings, in tables of their own (component 'autoread').
 */

/** Unicode emoji in read messages: their name, or dropped. */
export type AutoReadEmoji = 'name' | 'drop';

/** A server's auto-read settings; a server never configured reads as {@link defaultAutoReadSettings}. */
export interface AutoReadSettings {
  readonly guildId: string;
  /** Text channels whose new messages are read while Herald is in voice in the server. */
  readonly channelIds: readonly string[];
  /** Also read the text chat of the voice channel Herald is in. */
  readonly readVoiceChat: boolean;
  /** Read only members who are in Herald's voice channel. */
  readonly onlySameVoice: boolean;
  /** Never read bots or webhooks. */
  readonly ignoreBots: boolean;
  /** Messages starting with this are not read; '' reads every message. */
  readonly prefix: string;
  /** Skip messages sent with @silent. */
  readonly skipSilent: boolean;
  /** Start with "<name> said" unless the same author was read within {@link authorWindowSeconds}. */
  readonly announceAuthor: boolean;
  /** How long one author's messages follow each other without the name again. */
  readonly authorWindowSeconds: number;
  /** Most characters spoken per message, "<name> said" and "and more" included. */
  readonly maxChars: number;
  /** Unicode emoji: named or dropped. */
  readonly emoji: AutoReadEmoji;
  /** Say "a link to example.com" instead of "a link". */
  readonly linkDomains: boolean;
  /**
   * Come without a command: a message in a read channel while Herald is not in voice brings it into the author's
   * voice channel, and so does a member joining a voice channel that is itself read.
   */
  readonly autoJoin: boolean;
}

/** The settings an admin may change with one call; channels and opt-outs have their own methods. */
export type AutoReadSettingsPatch = Partial<Omit<AutoReadSettings, 'guildId' | 'channelIds'>>;

/** Bounds the store enforces and the command offers as option limits. */
export const AUTOREAD_LIMITS = {
  maxChars: { min: 20, max: 2_000 },
  authorWindowSeconds: { min: 0, max: 3_600 },
  prefixLength: 10,
  boundChannels: 25,
} as const;

/** The settings of a server nobody configured. */
export function defaultAutoReadSettings(guildId: string): AutoReadSettings {
  return {
    guildId,
    channelIds: [],
    readVoiceChat: true,
    onlySameVoice: true,
    ignoreBots: true,
    prefix: '!',
    skipSilent: true,
    announceAuthor: true,
    authorWindowSeconds: 60,
    maxChars: 300,
    emoji: 'name',
    linkDomains: false,
    autoJoin: false,
  };
}

/** Outcome of {@link AutoReadStore.bindChannel}. */
export type BindOutcome =
  | { readonly kind: 'bound' }
  | { readonly kind: 'unbound' }
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'too-many'; readonly limit: number };

/** Where auto-read settings are kept. Every write is durable when it resolves. */
export interface AutoReadStore {
  /** The server's settings; fields never set read as their default. */
  settings(guildId: string): Promise<AutoReadSettings>;
  /**
   * Changes some settings and returns the result.
   * @throws RangeError when a value is outside {@link AUTOREAD_LIMITS} or not a known choice.
   */
  update(guildId: string, patch: AutoReadSettingsPatch): Promise<AutoReadSettings>;
  /** Binds (`bound` true) or unbinds a channel; at most {@link AUTOREAD_LIMITS.boundChannels} per server. */
  bindChannel(guildId: string, channelId: string, bound: boolean): Promise<BindOutcome>;
  /** True when the member asked not to be read in this server. */
  optedOut(guildId: string, userId: string): Promise<boolean>;
  setOptedOut(guildId: string, userId: string, optedOut: boolean): Promise<void>;
}

/**
 * Append only: a released migration is never edited. Setting columns are nullable, NULL meaning "the default",
 * so a changed default reaches every server that never chose otherwise.
 */
export const AUTOREAD_MIGRATIONS = {
  sqlite: [
    `CREATE TABLE autoread_settings (
     guild_id TEXT PRIMARY KEY,
     read_voice_chat INTEGER,
     only_same_voice INTEGER,
     ignore_bots INTEGER,
     prefix TEXT,
     skip_silent INTEGER,
     announce_author INTEGER,
     author_window_seconds INTEGER,
     max_chars INTEGER,
     emoji TEXT,
     link_domains INTEGER,
     updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
   );
   CREATE TABLE autoread_channels (
     guild_id TEXT NOT NULL,
     channel_id TEXT NOT NULL,
     created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
     PRIMARY KEY (guild_id, channel_id)
   );
   CREATE TABLE autoread_opt_outs (
     guild_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
     PRIMARY KEY (guild_id, user_id)
   );`,
    'ALTER TABLE autoread_settings ADD COLUMN auto_join INTEGER;',
  ],
  postgres: [
    `CREATE TABLE autoread_settings (
     guild_id TEXT PRIMARY KEY,
     read_voice_chat INTEGER,
     only_same_voice INTEGER,
     ignore_bots INTEGER,
     prefix TEXT,
     skip_silent INTEGER,
     announce_author INTEGER,
     author_window_seconds INTEGER,
     max_chars INTEGER,
     emoji TEXT,
     link_domains INTEGER,
     updated_at TEXT NOT NULL
   );
   CREATE TABLE autoread_channels (
     guild_id TEXT NOT NULL,
     channel_id TEXT NOT NULL,
     created_at TEXT NOT NULL,
     PRIMARY KEY (guild_id, channel_id)
   );
   CREATE TABLE autoread_opt_outs (
     guild_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     created_at TEXT NOT NULL,
     PRIMARY KEY (guild_id, user_id)
   );`,
    'ALTER TABLE autoread_settings ADD COLUMN auto_join INTEGER;',
  ],
};

type Row = Record<(typeof COLUMNS)[number], string | number | null>;

const COLUMNS = [
  'read_voice_chat',
  'only_same_voice',
  'ignore_bots',
  'prefix',
  'skip_silent',
  'announce_author',
  'author_window_seconds',
  'max_chars',
  'emoji',
  'link_domains',
  'auto_join',
] as const;

/**
 * An {@link AutoReadStore} on an open database (SQLite or PostgreSQL), sharing it with the other stores; whoever
 * opened the database closes it. Applies the auto-read migrations first.
 */
export async function createAutoReadStore(db: Database): Promise<AutoReadStore> {
  await db.migrate('autoread', AUTOREAD_MIGRATIONS);
  const stamp = (): string => new Date().toISOString();
  const channels = async (guildId: string): Promise<string[]> =>
    (
      await db.all<{ channel_id: string }>(
        'SELECT channel_id FROM autoread_channels WHERE guild_id = $1 ORDER BY created_at, channel_id',
        [guildId],
      )
    ).map((r) => r.channel_id);
  const selectRow = (guildId: string): Promise<Row | undefined> =>
    db.get<Row>(`SELECT ${COLUMNS.join(', ')} FROM autoread_settings WHERE guild_id = $1`, [guildId]);

  const read = async (guildId: string): Promise<AutoReadSettings> => {
    const row = await selectRow(guildId);
    return { ...fromRow(guildId, row), channelIds: await channels(guildId) };
  };

  return {
    settings: read,
    async update(guildId, patch) {
      validate(patch);
      const current = (await selectRow(guildId)) ?? emptyRow();
      const next = { ...current, ...toRow(patch) };
      const values = COLUMNS.map((_, i) => `$${i + 2}`).join(', ');
      await db.run(
        `INSERT INTO autoread_settings (guild_id, ${COLUMNS.join(', ')}, updated_at)
         VALUES ($1, ${values}, $${COLUMNS.length + 2})
         ON CONFLICT (guild_id) DO UPDATE SET ${COLUMNS.map((c) => `${c} = excluded.${c}`).join(', ')},
           updated_at = excluded.updated_at`,
        [guildId, ...COLUMNS.map((column) => next[column]), stamp()],
      );
      return read(guildId);
    },
    async bindChannel(guildId, channelId, bound) {
      if (!bound) {
        const removed = await db.run(
          'DELETE FROM autoread_channels WHERE guild_id = $1 AND channel_id = $2',
          [guildId, channelId],
        );
        return removed > 0 ? { kind: 'unbound' } : { kind: 'unchanged' };
      }
      const existing = await channels(guildId);
      if (existing.includes(channelId)) return { kind: 'unchanged' };
      const limit = AUTOREAD_LIMITS.boundChannels;
      if (existing.length >= limit) return { kind: 'too-many', limit };
      await db.run(
        'INSERT INTO autoread_channels (guild_id, channel_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
        [guildId, channelId, stamp()],
      );
      return { kind: 'bound' };
    },
    async optedOut(guildId, userId) {
      const row = await db.get(
        'SELECT 1 AS yes FROM autoread_opt_outs WHERE guild_id = $1 AND user_id = $2',
        [guildId, userId],
      );
      return row !== undefined;
    },
    async setOptedOut(guildId, userId, optedOut) {
      if (optedOut) {
        await db.run(
          'INSERT INTO autoread_opt_outs (guild_id, user_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
          [guildId, userId, stamp()],
        );
      } else {
        await db.run('DELETE FROM autoread_opt_outs WHERE guild_id = $1 AND user_id = $2', [guildId, userId]);
      }
    },
  };
}

function emptyRow(): Row {
  return Object.fromEntries(COLUMNS.map((column) => [column, null])) as Row;
}

function fromRow(guildId: string, row: Row | undefined): Omit<AutoReadSettings, 'channelIds'> {
  const defaults = defaultAutoReadSettings(guildId);
  if (!row) return defaults;
  const flag = (value: string | number | null, fallback: boolean): boolean =>
    value === null ? fallback : value === 1;
  const integer = (value: string | number | null, fallback: number): number =>
    typeof value === 'number' ? value : fallback;
  return {
    guildId,
    readVoiceChat: flag(row.read_voice_chat, defaults.readVoiceChat),
    onlySameVoice: flag(row.only_same_voice, defaults.onlySameVoice),
    ignoreBots: flag(row.ignore_bots, defaults.ignoreBots),
    prefix: typeof row.prefix === 'string' ? row.prefix : defaults.prefix,
    skipSilent: flag(row.skip_silent, defaults.skipSilent),
    announceAuthor: flag(row.announce_author, defaults.announceAuthor),
    authorWindowSeconds: integer(row.author_window_seconds, defaults.authorWindowSeconds),
    maxChars: integer(row.max_chars, defaults.maxChars),
    // A value written by a newer Herald that this one does not know reads as the default.
    emoji: row.emoji === 'drop' || row.emoji === 'name' ? row.emoji : defaults.emoji,
    linkDomains: flag(row.link_domains, defaults.linkDomains),
    autoJoin: flag(row.auto_join, defaults.autoJoin),
  };
}

function toRow(patch: AutoReadSettingsPatch): Partial<Row> {
  const row: Partial<Row> = {};
  const flag = (value: boolean): number => (value ? 1 : 0);
  if (patch.readVoiceChat !== undefined) row.read_voice_chat = flag(patch.readVoiceChat);
  if (patch.onlySameVoice !== undefined) row.only_same_voice = flag(patch.onlySameVoice);
  if (patch.ignoreBots !== undefined) row.ignore_bots = flag(patch.ignoreBots);
  if (patch.prefix !== undefined) row.prefix = patch.prefix;
  if (patch.skipSilent !== undefined) row.skip_silent = flag(patch.skipSilent);
  if (patch.announceAuthor !== undefined) row.announce_author = flag(patch.announceAuthor);
  if (patch.authorWindowSeconds !== undefined) row.author_window_seconds = patch.authorWindowSeconds;
  if (patch.maxChars !== undefined) row.max_chars = patch.maxChars;
  if (patch.emoji !== undefined) row.emoji = patch.emoji;
  if (patch.linkDomains !== undefined) row.link_domains = flag(patch.linkDomains);
  if (patch.autoJoin !== undefined) row.auto_join = flag(patch.autoJoin);
  return row;
}

function validate(patch: AutoReadSettingsPatch): void {
  const within = (name: string, value: number | undefined, bounds: { min: number; max: number }): void => {
    if (value === undefined) return;
    if (!Number.isInteger(value) || value < bounds.min || value > bounds.max) {
      throw new RangeError(
        `auto-read ${name} must be an integer from ${bounds.min} to ${bounds.max}, not ${value}`,
      );
    }
  };
  within('maxChars', patch.maxChars, AUTOREAD_LIMITS.maxChars);
  within('authorWindowSeconds', patch.authorWindowSeconds, AUTOREAD_LIMITS.authorWindowSeconds);
  if (patch.prefix !== undefined && [...patch.prefix].length > AUTOREAD_LIMITS.prefixLength) {
    throw new RangeError(`auto-read prefix must be at most ${AUTOREAD_LIMITS.prefixLength} characters`);
  }
  if (patch.emoji !== undefined && patch.emoji !== 'name' && patch.emoji !== 'drop') {
    throw new RangeError(`auto-read emoji must be 'name' or 'drop', not ${String(patch.emoji)}`);
  }
}
