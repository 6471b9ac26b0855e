import { existsSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { AUTOREAD_MIGRATIONS } from '../autoread/settings.ts';
import { BUDGET_MIGRATIONS, formatUsd } from '../budget/index.ts';
import { CACHE_MIGRATIONS } from '../cache/index.ts';
import { type Config, secretsOf } from '../config.ts';
import { MEMBER_MIGRATIONS } from '../members/index.ts';
import { findSpeaker } from '../members/speakers.ts';
import { holderOf, SHARD_LEASES_SELECT, type ShardLeaseHolder, type ShardLeaseRow } from '../shard/lease.ts';
import {
  type Dialect,
  type Migrations,
  openDatabase,
  SETTINGS_MIGRATIONS,
  UNREACHABLE_CODES,
} from '../storage/index.ts';
import type { Speaker } from '../tts/index.ts';
import { type DoctorCheck, messageOf } from './doctor-check.ts';

/**
 * The doctor's database checks, the same on SQLite and PostgreSQL: the database is read once, without changing
 * it ({@link readDatabase}), and the report's rows are judged from what was read ({@link databaseChecks}).
 */

/** A voice an admin or a member chose, as stored. */
interface StoredVoice {
  readonly guildId: string;
  readonly scope: 'server' | 'member';
  readonly speakerId: string;
}

/** The budget account's row, as the doctor needs it. */
interface StoredAccount {
  readonly balanceUsd: number | null;
  readonly balanceSeenAt: number | null;
  readonly blockedSince: number | null;
  readonly blockedReason: string | null;
}

/** What the doctor found in the database. */
export type DatabaseFacts =
  | { readonly status: 'in-memory' }
  /** A SQLite file not created yet: Herald creates it at start. */
  | { readonly status: 'not-created'; readonly where: string }
  | { readonly status: 'unreadable'; readonly detail: string; readonly fix: string }
  | {
      readonly status: 'read';
      /** The file's path, or the PostgreSQL URL without its password. */
      readonly where: string;
      readonly dialect: Dialect;
      /** Schema version per component; empty for a PostgreSQL database Herald never started on. */
      readonly versions: ReadonlyMap<string, number>;
      readonly voices: readonly StoredVoice[];
      readonly account: StoredAccount | undefined;
      /** Auto-read channel ids per server. */
      readonly autoRead: ReadonlyMap<string, readonly string[]>;
      /** The shard leases, live or not (none before a Herald that keeps them started). */
      readonly leases: readonly ShardLeaseHolder[];
    };

/**
 * The migrations of every component Herald migrates at start, to tell a database behind this code (or ahead of
 * it, which stops Herald at start) from a current one.
 */
const COMPONENTS: readonly [string, Migrations][] = [
  ['settings', SETTINGS_MIGRATIONS],
  ['autoread', AUTOREAD_MIGRATIONS],
  ['budget', BUDGET_MIGRATIONS],
  ['members', MEMBER_MIGRATIONS],
  ['cache', CACHE_MIGRATIONS],
];

/** How long the doctor waits for a PostgreSQL connection: a dropped packet must not hang it. */
const CONNECT_TIMEOUT_MS = 10_000;

/** The one kind of statement the doctor runs; the storage layer's `Queryable` is one. */
interface Reader {
  all<Row>(sql: string): Promise<Row[]>;
}

/** Reads the configured database without changing it. Never throws: a failure is an `unreadable` value. */
export async function readDatabase(
  config: Config,
  connectTimeoutMs = CONNECT_TIMEOUT_MS,
): Promise<DatabaseFacts> {
  const database = config.database;
  if (database.kind === 'sqlite') return readSqlite(database.path);
  const where = withoutPassword(database.url);
  const db = openDatabase({ ...database, poolSize: 1 }, { connectTimeoutMs });
  try {
    return { status: 'read', where, ...(await readTables(db, 'postgres')) };
  } catch (error) {
    const problem = postgresProblem(error, where);
    // A driver message could quote the URL it was given; the password must not reach the report.
    const scrub = (text: string): string =>
      secretsOf(config)
        .filter((secret) => secret !== '')
        .reduce((acc, secret) => acc.split(secret).join('[redacted]'), text);
    return { status: 'unreadable', detail: scrub(problem.detail), fix: problem.fix };
  } finally {
    await db.close();
  }
}

/** Auto-read channel ids per server; empty when the database could not be read. */
export function autoReadChannels(facts: DatabaseFacts): ReadonlyMap<string, readonly string[]> {
  return facts.status === 'read' ? facts.autoRead : new Map();
}

async function readSqlite(path: string): Promise<DatabaseFacts> {
  if (path === ':memory:') return { status: 'in-memory' };
  if (!existsSync(path)) return { status: 'not-created', where: path };
  // Opened by hand, read-only: the storage layer's SQLite door opens for writing (WAL mode, its migrations table).
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(path, { readOnly: true });
    const sync = db;
    const reader: Reader = { all: async <Row>(sql: string) => sync.prepare(sql).all() as Row[] };
    return { status: 'read', where: path, ...(await readTables(reader, 'sqlite')) };
  } catch (error) {
    return {
      status: 'unreadable',
      detail: `${path} cannot be read: ${messageOf(error)}`,
      fix: 'Check the file’s permissions and that it is a Herald SQLite database (restore the backup if it is damaged).',
    };
  } finally {
    db?.close();
  }
}

/** The same statements on both engines; a component's tables are read only once its migrations created them. */
async function readTables(
  db: Reader,
  dialect: Dialect,
): Promise<Omit<Extract<DatabaseFacts, { status: 'read' }>, 'status' | 'where'>> {
  const rows = await db
    .all<{ component: string; version: number }>('SELECT component, version FROM schema_migrations')
    .catch((error: unknown) => {
      // 42P01 undefined_table: a PostgreSQL database Herald never started on (it creates the table at start).
      // A SQLite file without it is not Herald's: Herald creates the table when it creates the file.
      if (dialect === 'postgres' && codeOf(error) === '42P01') return [];
      throw error;
    });
  const versions = new Map(rows.map((row) => [row.component, row.version]));
  const version = (component: string): number => versions.get(component) ?? 0;

  const voices: StoredVoice[] = [];
  if (version('settings') >= 1) {
    const servers = await db.all<{ guild_id: string; id: string }>(
      'SELECT guild_id, default_speaker_id AS id FROM guild_settings WHERE default_speaker_id IS NOT NULL',
    );
    const members = await db.all<{ guild_id: string; id: string }>(
      'SELECT guild_id, speaker_id AS id FROM member_settings WHERE speaker_id IS NOT NULL',
    );
    for (const row of servers) voices.push({ guildId: row.guild_id, scope: 'server', speakerId: row.id });
    for (const row of members) voices.push({ guildId: row.guild_id, scope: 'member', speakerId: row.id });
  }

  let account: StoredAccount | undefined;
  if (version('budget') >= 1) {
    // SQLite's first budget schema kept dollars as REAL; its migration 2 (and PostgreSQL's first) whole nano-dollars.
    const nanos = dialect === 'sqlite' && version('budget') < 2 ? 'balance_usd * 1e9' : 'balance_nanos';
    const [row] = await db.all<{
      nanos: number | null;
      balance_seen_at: number | null;
      blocked_since: number | null;
      blocked_reason: string | null;
    }>(
      `SELECT ${nanos} AS nanos, balance_seen_at, blocked_since, blocked_reason FROM budget_account WHERE id = 1`,
    );
    account = row && {
      balanceUsd: row.nanos === null ? null : row.nanos / 1e9,
      balanceSeenAt: row.balance_seen_at,
      blockedSince: row.blocked_since,
      blockedReason: row.blocked_reason,
    };
  }

  const autoRead = new Map<string, string[]>();
  if (version('autoread') >= 1) {
    for (const row of await db.all<{ guild_id: string; channel_id: string }>(
      'SELECT guild_id, channel_id FROM autoread_channels',
    )) {
      autoRead.set(row.guild_id, [...(autoRead.get(row.guild_id) ?? []), row.channel_id]);
    }
  }
  const leases =
    version('shard-leases') >= 1 ? (await db.all<ShardLeaseRow>(SHARD_LEASES_SELECT)).map(holderOf) : [];
  return { dialect, versions, voices, account, autoRead, leases };
}

/** A PostgreSQL failure as a report row's detail and fix, by its SQLSTATE or socket error code. */
function postgresProblem(error: unknown, where: string): { detail: string; fix: string } {
  const code = codeOf(error);
  const message = messageOf(error);
  // 28P01 invalid_password; 28000 invalid_authorization_specification (no pg_hba.conf entry, or SSL required).
  if (code === '28P01' || code === '28000') {
    return {
      detail: `${where} refused the login: ${message}`,
      fix: 'Check the user name and password in DATABASE_URL, and that pg_hba.conf lets this machine in.',
    };
  }
  // 3D000 invalid_catalog_name: the server runs, the database named at the end of the URL does not exist.
  if (code === '3D000') {
    const name = decodeURIComponent(URL.parse(where)?.pathname.slice(1) ?? '') || 'herald';
    return {
      detail: `${where}: ${message}`,
      fix: `Create the database (\`createdb ${name}\`, or CREATE DATABASE ${name}; as an admin), or fix its name at the end of DATABASE_URL.`,
    };
  }
  if ((code !== undefined && UNREACHABLE_CODES.has(code)) || /timeout/i.test(message)) {
    return {
      detail: `${where} cannot be reached: ${message}`,
      fix: 'Check the host and port in DATABASE_URL, and that PostgreSQL runs and listens there (listen_addresses, firewall; under Compose the host is the service name).',
    };
  }
  return {
    detail: `${where} cannot be read: ${message}`,
    fix: 'Check DATABASE_URL, and that its user may read Herald’s tables (restore the backup if they are damaged).',
  };
}

/** The database's report rows: reachable and migrated, the stored voices still offered, the last balance. */
export function databaseChecks(
  config: Config,
  facts: DatabaseFacts,
  speakers: readonly Speaker[] | undefined,
  guilds: readonly { readonly id: string; readonly name: string }[] | undefined,
): DoctorCheck[] {
  switch (facts.status) {
    case 'in-memory':
      return [
        {
          name: 'Database',
          status: 'fail',
          blocks: false,
          detail: 'in memory: settings and the budget ledger are lost at every restart',
          fix: 'Set DATABASE_URL=sqlite:./data/herald.sqlite (or another file that is backed up).',
        },
      ];
    case 'not-created':
      return [
        {
          name: 'Database',
          status: 'ok',
          detail: `${facts.where} does not exist yet; Herald creates it at start`,
        },
      ];
    case 'unreadable':
      return [{ name: 'Database', status: 'fail', blocks: true, detail: facts.detail, fix: facts.fix }];
    case 'read':
      return [
        migrationCheck(facts),
        ...(speakers === undefined ? [] : [voicesCheck(config, facts.voices, speakers, guilds)]),
        budgetCheck(config, facts.account),
      ];
  }
}

function migrationCheck(facts: Extract<DatabaseFacts, { status: 'read' }>): DoctorCheck {
  const version = (name: string): number => facts.versions.get(name) ?? 0;
  const newer = COMPONENTS.filter(([name, migrations]) => version(name) > migrations[facts.dialect].length);
  const behind = COMPONENTS.filter(([name, migrations]) => version(name) < migrations[facts.dialect].length);
  if (newer.length > 0) {
    return {
      name: 'Database',
      status: 'fail',
      blocks: true,
      detail: `${facts.where}: ${newer.map(([name]) => name).join(', ')} tables were written by a newer Herald`,
      fix: 'Upgrade Herald to the version that wrote this database (or restore an older backup).',
    };
  }
  const state =
    facts.versions.size === 0
      ? 'no Herald tables yet (Herald creates them at start)'
      : behind.length === 0
        ? 'migrations current'
        : `${behind.map(([name]) => name).join(', ')} migrated at the next start`;
  return { name: 'Database', status: 'ok', detail: `${facts.where}: reachable, ${state}` };
}

function voicesCheck(
  config: Config,
  stored: readonly StoredVoice[],
  speakers: readonly Speaker[],
  guilds: readonly { readonly id: string; readonly name: string }[] | undefined,
): DoctorCheck {
  const names = new Map((guilds ?? []).map((guild) => [guild.id, guild.name]));
  const server = (id: string): string => names.get(id) ?? id;
  const chosen = [
    ...(config.tts.defaultSpeaker === undefined
      ? []
      : [{ where: 'TTS_DEFAULT_SPEAKER', id: config.tts.defaultSpeaker }]),
    ...stored.map((voice) => ({
      where:
        voice.scope === 'server'
          ? `${server(voice.guildId)}'s voice`
          : `a member's voice in ${server(voice.guildId)}`,
      id: voice.speakerId,
    })),
  ];
  const gone = chosen.filter((voice) => findSpeaker(speakers, voice.id) === undefined);
  return gone.length === 0
    ? { name: 'Stored voices', status: 'ok', detail: `${chosen.length} chosen voices, all still offered` }
    : {
        name: 'Stored voices',
        status: 'fail',
        blocks: false,
        detail: `no longer offered: ${gone.map((voice) => `${voice.where} (${voice.id})`).join('; ')}; Herald falls back to the next choice`,
        fix: 'Choose a voice again with /voice-set (server or member), or fix TTS_DEFAULT_SPEAKER; /voices lists what is offered.',
      };
}

function budgetCheck(config: Config, account: StoredAccount | undefined): DoctorCheck {
  const floor = config.budget.floorUsd;
  const warn = config.budget.warnUsd;
  const balance = account?.balanceUsd ?? null;
  const seen = account?.balanceSeenAt ? ` (seen ${new Date(account.balanceSeenAt).toISOString()})` : '';
  if (account?.blockedSince != null) {
    return {
      name: 'Budget',
      status: 'fail',
      blocks: true,
      detail: `spending stopped (${account.blockedReason ?? 'floor-reached'}); last balance ${balance === null ? 'unknown' : formatUsd(balance)}${seen}, floor ${formatUsd(floor)}`,
      fix: 'Top up the TTS account: Herald re-checks by itself every BUDGET_RECHECK_MINUTES, or an operator runs /budget recheck.',
    };
  }
  if (balance !== null && balance <= floor) {
    return {
      name: 'Budget',
      status: 'fail',
      blocks: true,
      detail: `last balance ${formatUsd(balance)}${seen} is at or under the floor ${formatUsd(floor)}`,
      fix: 'Top up the TTS account (Herald re-checks by itself, or run /budget recheck), or lower BUDGET_FLOOR_USD.',
    };
  }
  if (balance !== null && warn !== undefined && balance <= warn) {
    return {
      name: 'Budget',
      status: 'fail',
      blocks: false,
      detail: `last balance ${formatUsd(balance)}${seen} is under the warning level ${formatUsd(warn)} (floor ${formatUsd(floor)})`,
      fix: 'Top up the TTS account soon.',
    };
  }
  return {
    name: 'Budget',
    status: 'ok',
    detail:
      balance === null
        ? `no balance seen yet (floor ${formatUsd(floor)})`
        : `last balance ${formatUsd(balance)}${seen}, floor ${formatUsd(floor)}${warn === undefined ? '' : `, warning at ${formatUsd(warn)}`}`,
  };
}

/** A PostgreSQL URL as the report may show it: no password, no query (which can hold one too). */
function withoutPassword(text: string): string {
  const url = URL.parse(text);
  if (!url) return 'DATABASE_URL';
  return `${url.protocol}//${url.username === '' ? '' : `${url.username}@`}${url.host}${url.pathname}`;
}

/** A SQLSTATE (PostgreSQL) or a socket error code (`ECONNREFUSED`), when the error carries one. */
function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The message, or the code when there is none (a refused `localhost`, tried on ::1 and 127.0.0.1, has none). */
