import type { Database, Migrations } from '../storage/database.ts';
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

/** The member tables' migrations, applied by {@link createMemberStore}. Append only: a released one is never edited. */
export const MEMBER_MIGRATIONS: Migrations = {
  sqlite: [
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
  ],
  postgres: [
    `CREATE TABLE member_dictionary (
       guild_id TEXT NOT NULL,
       word_key TEXT NOT NULL,
       word TEXT NOT NULL,
       spoken TEXT NOT NULL,
       created_at BIGINT NOT NULL,
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
       temperature DOUBLE PRECISION,
       PRIMARY KEY (guild_id, user_id)
     );
     CREATE TABLE guild_voice (
       guild_id TEXT PRIMARY KEY,
       temperature DOUBLE PRECISION
     );`,
  ],
};

/** A {@link MemberStore} on Herald's database, shared with the other stores; applies its migrations first. */
export async function createMemberStore(db: Database, now: () => number = Date.now): Promise<MemberStore> {
  await db.migrate('members', MEMBER_MIGRATIONS);
  const member = (guildId: string, userId: string) =>
    db.get<{ spoken_name: string | null; temperature: number | null }>(
      'SELECT spoken_name, temperature FROM member_voice WHERE guild_id = $1 AND user_id = $2',
      [guildId, userId],
    );
  const checkTemperature = (temperature: number | null): void => {
    const { min, max } = MEMBER_LIMITS.temperature;
    if (temperature !== null && !(temperature >= min && temperature <= max)) {
      throw new RangeError(`temperature must be from ${min} to ${max}, not ${temperature}`);
    }
  };

  return {
    async dictionary(guildId) {
      const rows = await db.all<{ word: string; spoken: string }>(
        'SELECT word, spoken FROM member_dictionary WHERE guild_id = $1 ORDER BY created_at, word_key',
        [guildId],
      );
      return rows.map((row) => ({ word: row.word, spoken: row.spoken }));
    },
    async addWord(guildId, word, spoken) {
      const key = wordKey(word);
      const said = spoken.trim().replace(/\s+/g, ' ');
      if (key === '' || said === '') return { kind: 'empty' };
      const limit = MEMBER_LIMITS.dictionaryChars;
      if ([...key].length > limit || [...said].length > limit) return { kind: 'too-long', limit };
      // One transaction, so the limit holds when two admins add words at once.
      return db.transaction(async (tx): Promise<AddWordOutcome> => {
        const previous = await tx.get<{ spoken: string }>(
          'SELECT spoken FROM member_dictionary WHERE guild_id = $1 AND word_key = $2',
          [guildId, key],
        );
        if (!previous) {
          const count = await tx.get<{ n: number }>(
            'SELECT COUNT(*) AS n FROM member_dictionary WHERE guild_id = $1',
            [guildId],
          );
          if (Number(count?.n ?? 0) >= MEMBER_LIMITS.dictionaryEntries) {
            return { kind: 'full', limit: MEMBER_LIMITS.dictionaryEntries };
          }
        }
        await tx.run(
          `INSERT INTO member_dictionary (guild_id, word_key, word, spoken, created_at) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (guild_id, word_key) DO UPDATE SET word = excluded.word, spoken = excluded.spoken`,
          [guildId, key, word.trim().replace(/\s+/g, ' '), said, now()],
        );
        return previous ? { kind: 'replaced', previous: previous.spoken } : { kind: 'added' };
      });
    },
    async removeWord(guildId, word) {
      const changed = await db.run('DELETE FROM member_dictionary WHERE guild_id = $1 AND word_key = $2', [
        guildId,
        wordKey(word),
      ]);
      return changed > 0;
    },
    async blocked(guildId, userId) {
      const row = await db.get('SELECT 1 AS yes FROM member_blocks WHERE guild_id = $1 AND user_id = $2', [
        guildId,
        userId,
      ]);
      return row !== undefined;
    },
    async setBlocked(guildId, userId, blocked) {
      const changed = blocked
        ? await db.run(
            'INSERT INTO member_blocks (guild_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
            [guildId, userId],
          )
        : await db.run('DELETE FROM member_blocks WHERE guild_id = $1 AND user_id = $2', [guildId, userId]);
      return changed > 0;
    },
    async blockedMembers(guildId) {
      const rows = await db.all<{ user_id: string }>(
        'SELECT user_id FROM member_blocks WHERE guild_id = $1 ORDER BY user_id',
        [guildId],
      );
      return rows.map((row) => row.user_id);
    },
    async spokenName(guildId, userId) {
      return (await member(guildId, userId))?.spoken_name ?? null;
    },
    async setSpokenName(guildId, userId, name) {
      if (name !== null && [...name].length > MEMBER_LIMITS.spokenNameChars) {
        throw new RangeError(`a spoken name must be at most ${MEMBER_LIMITS.spokenNameChars} characters`);
      }
      await db.run(
        `INSERT INTO member_voice (guild_id, user_id, spoken_name) VALUES ($1, $2, $3)
         ON CONFLICT (guild_id, user_id) DO UPDATE SET spoken_name = excluded.spoken_name`,
        [guildId, userId, name],
      );
    },
    async memberTemperature(guildId, userId) {
      return (await member(guildId, userId))?.temperature ?? null;
    },
    async setMemberTemperature(guildId, userId, temperature) {
      checkTemperature(temperature);
      await db.run(
        `INSERT INTO member_voice (guild_id, user_id, temperature) VALUES ($1, $2, $3)
         ON CONFLICT (guild_id, user_id) DO UPDATE SET temperature = excluded.temperature`,
        [guildId, userId, temperature],
      );
    },
    async guildTemperature(guildId) {
      const row = await db.get<{ temperature: number | null }>(
        'SELECT temperature FROM guild_voice WHERE guild_id = $1',
        [guildId],
      );
      return row?.temperature ?? null;
    },
    async setGuildTemperature(guildId, temperature) {
      checkTemperature(temperature);
      await db.run(
        `INSERT INTO guild_voice (guild_id, temperature) VALUES ($1, $2)
         ON CONFLICT (guild_id) DO UPDATE SET temperature = excluded.temperature`,
        [guildId, temperature],
      );
    },
  };
}
