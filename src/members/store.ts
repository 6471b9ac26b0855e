import type { DatabaseSync } from 'node:sqlite';
import { migrate } from '../storage/sqlite.ts';
import { type Pronunciation, wordKey } from '../text/pronounce.ts';

/** Bounds of what members and admins may store; the commands quote them in their errors. */
export const MEMBER_LIMITS = {
  dictionaryEntries: 500,
  /** Characters of a word, and of its spoken form. */
  dictionaryChars: 100,
  /** Characters of a spoken name (Discord's own nickname limit). */
  spokenNameChars: 32,
  temperature: { min: 0.5, max: 2 },
} as const;

/** Outcome of {@link MemberStore.addWord}. */
export type AddWordOutcome =
  | { readonly kind: 'added' }
  | { readonly kind: 'replaced'; readonly previous: string }
  | { readonly kind: 'full'; readonly limit: number }
  | { readonly kind: 'too-long'; readonly limit: number }
  | { readonly kind: 'empty' };

/**
 * What members and admins set for how Herald speaks in a server: the pronunciation dictionary, the block list,
 * spoken names and temperatures. Asynchronous so a PostgreSQL store can stand behind it; SQL kept portable.
 */
export interface MemberStore {
  /** The server's dictionary, in the order words were added. */
  dictionary(guildId: string): Promise<Pronunciation[]>;
  /** Adds (or replaces) a word; at most {@link MEMBER_LIMITS.dictionaryEntries} per server. */
  addWord(guildId: string, word: string, spoken: string): Promise<AddWordOutcome>;
  /** False when the word was not in the dictionary. */
  removeWord(guildId: string, word: string): Promise<boolean>;
  blocked(guildId: string, userId: string): Promise<boolean>;
  /** False when nothing changed (already blocked, or not blocked). */
  setBlocked(guildId: string, userId: string, blocked: boolean): Promise<boolean>;
  blockedMembers(guildId: string): Promise<string[]>;
  /** The name Herald says for the member (`/nickname`), or null. */
  spokenName(guildId: string, userId: string): Promise<string | null>;
  setSpokenName(guildId: string, userId: string, name: string | null): Promise<void>;
  /** The member's own temperature, or null. */
  memberTemperature(guildId: string, userId: string): Promise<number | null>;
  setMemberTemperature(guildId: string, userId: string, temperature: number | null): Promise<void>;
  /** The server's default temperature, or null (the service's default). */
  guildTemperature(guildId: string): Promise<number | null>;
  setGuildTemperature(guildId: string, temperature: number | null): Promise<void>;
}

/** Append only: a released migration is never edited. */
const MEMBER_MIGRATIONS: readonly string[] = [
  `CREATE TABLE member_dictionary (
     guild_id TEXT NOT NULL,
     word_key TEXT NOT NULL,
     word TEXT NOT NULL,
     spoken TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     PRIMARY KEY (guild_id, word_key)
   );
   CREATE TABLE member_blocks (
     guild_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     PRIMARY KEY (guild_id, user_id)
   );
   CREATE TABLE member_voice (
     guild_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     spoken_name TEXT,
     temperature REAL,
     PRIMARY KEY (guild_id, user_id)
   );
   CREATE TABLE guild_voice (
     guild_id TEXT PRIMARY KEY,
     temperature REAL
   );`,
];

/** A {@link MemberStore} on a database from `openSqlite`, shared with the other stores. */
export function createSqliteMemberStore(db: DatabaseSync, now: () => number = Date.now): MemberStore {
  migrate(db, 'members', MEMBER_MIGRATIONS);
  const selectWords = db.prepare(
    'SELECT word, spoken FROM member_dictionary WHERE guild_id = ? ORDER BY created_at, word_key',
  );
  const selectWord = db.prepare('SELECT spoken FROM member_dictionary WHERE guild_id = ? AND word_key = ?');
  const countWords = db.prepare('SELECT COUNT(*) AS n FROM member_dictionary WHERE guild_id = ?');
  const upsertWord = db.prepare(
    `INSERT INTO member_dictionary (guild_id, word_key, word, spoken, created_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (guild_id, word_key) DO UPDATE SET word = excluded.word, spoken = excluded.spoken`,
  );
  const deleteWord = db.prepare('DELETE FROM member_dictionary WHERE guild_id = ? AND word_key = ?');
  const selectBlock = db.prepare('SELECT 1 AS yes FROM member_blocks WHERE guild_id = ? AND user_id = ?');
  const insertBlock = db.prepare(
    'INSERT INTO member_blocks (guild_id, user_id) VALUES (?, ?) ON CONFLICT DO NOTHING',
  );
  const deleteBlock = db.prepare('DELETE FROM member_blocks WHERE guild_id = ? AND user_id = ?');
  const selectBlocks = db.prepare('SELECT user_id FROM member_blocks WHERE guild_id = ? ORDER BY user_id');
  const selectMember = db.prepare(
    'SELECT spoken_name, temperature FROM member_voice WHERE guild_id = ? AND user_id = ?',
  );
  const upsertName = db.prepare(
    `INSERT INTO member_voice (guild_id, user_id, spoken_name) VALUES (?, ?, ?)
     ON CONFLICT (guild_id, user_id) DO UPDATE SET spoken_name = excluded.spoken_name`,
  );
  const upsertTemperature = db.prepare(
    `INSERT INTO member_voice (guild_id, user_id, temperature) VALUES (?, ?, ?)
     ON CONFLICT (guild_id, user_id) DO UPDATE SET temperature = excluded.temperature`,
  );
  const selectGuild = db.prepare('SELECT temperature FROM guild_voice WHERE guild_id = ?');
  const upsertGuild = db.prepare(
    `INSERT INTO guild_voice (guild_id, temperature) VALUES (?, ?)
     ON CONFLICT (guild_id) DO UPDATE SET temperature = excluded.temperature`,
  );
  const member = (guildId: string, userId: string) =>
    selectMember.get(guildId, userId) as
      | { spoken_name: string | null; temperature: number | null }
      | undefined;
  const checkTemperature = (temperature: number | null): void => {
    const { min, max } = MEMBER_LIMITS.temperature;
    if (temperature !== null && !(temperature >= min && temperature <= max)) {
      throw new RangeError(`temperature must be from ${min} to ${max}, not ${temperature}`);
    }
  };

  return {
    async dictionary(guildId) {
      return (selectWords.all(guildId) as { word: string; spoken: string }[]).map((row) => ({
        word: row.word,
        spoken: row.spoken,
      }));
    },
    async addWord(guildId, word, spoken) {
      const key = wordKey(word);
      const said = spoken.trim().replace(/\s+/g, ' ');
      if (key === '' || said === '') return { kind: 'empty' };
      const limit = MEMBER_LIMITS.dictionaryChars;
      if ([...key].length > limit || [...said].length > limit) return { kind: 'too-long', limit };
      const previous = selectWord.get(guildId, key) as { spoken: string } | undefined;
      if (!previous && (countWords.get(guildId) as { n: number }).n >= MEMBER_LIMITS.dictionaryEntries) {
        return { kind: 'full', limit: MEMBER_LIMITS.dictionaryEntries };
      }
      upsertWord.run(guildId, key, word.trim().replace(/\s+/g, ' '), said, now());
      return previous ? { kind: 'replaced', previous: previous.spoken } : { kind: 'added' };
    },
    async removeWord(guildId, word) {
      return deleteWord.run(guildId, wordKey(word)).changes > 0;
    },
    async blocked(guildId, userId) {
      return selectBlock.get(guildId, userId) !== undefined;
    },
    async setBlocked(guildId, userId, blocked) {
      const result = blocked ? insertBlock.run(guildId, userId) : deleteBlock.run(guildId, userId);
      return result.changes > 0;
    },
    async blockedMembers(guildId) {
      return (selectBlocks.all(guildId) as { user_id: string }[]).map((row) => row.user_id);
    },
    async spokenName(guildId, userId) {
      return member(guildId, userId)?.spoken_name ?? null;
    },
    async setSpokenName(guildId, userId, name) {
      if (name !== null && [...name].length > MEMBER_LIMITS.spokenNameChars) {
        throw new RangeError(`a spoken name must be at most ${MEMBER_LIMITS.spokenNameChars} characters`);
      }
      upsertName.run(guildId, userId, name);
    },
    async memberTemperature(guildId, userId) {
      return member(guildId, userId)?.temperature ?? null;
    },
    async setMemberTemperature(guildId, userId, temperature) {
      checkTemperature(temperature);
      upsertTemperature.run(guildId, userId, temperature);
    },
    async guildTemperature(guildId) {
      return (selectGuild.get(guildId) as { temperature: number | null } | undefined)?.temperature ?? null;
    },
    async setGuildTemperature(guildId, temperature) {
      checkTemperature(temperature);
      upsertGuild.run(guildId, temperature);
    },
  };
}
