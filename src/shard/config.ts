/**
 * Which shards a process runs. `SHARD_COUNT` (a number, or `auto`: ask Discord) and `SHARD_IDS` (ranges such as
 * `0-7` or `0,2,4-5`) are read by `npm run start:shards`; a process that discord.js's ShardingManager spawned is
 * told its own shard through `SHARDING_MANAGER`, `SHARDS` and `SHARD_COUNT`, which discord.js itself sets.
 */

/** The shards a process group (or one process) runs. */
export interface ShardConfig {
  /** `SHARD_COUNT`: the total number of shards of the whole bot, or `auto` (Discord's recommendation). */
  readonly count: number | 'auto';
  /** `SHARD_IDS`: the shards run here; undefined: every shard of `count`. */
  readonly ids: readonly number[] | undefined;
  /** True in a process spawned by the ShardingManager (one shard each). */
  readonly managed: boolean;
}

/** Result of {@link parseShardConfig}. */
export type ShardConfigResult =
  | { readonly ok: true; readonly value: ShardConfig }
  | { readonly ok: false; readonly problems: string[] };

/** Discord caps what one bot may ask for; more shards than this is a typo. */
export const MAX_SHARD_COUNT = 10_000;

/** Unsharded: one process, one shard (`npm start` by default). */
export const ONE_SHARD: ShardConfig = { count: 1, ids: [0], managed: false };

/**
 * At most this many shard processes with `SHARD_PROCESSES=auto`: each is a process of its own (about 120 MB idle)
 * and an IDENTIFY of Discord's 1,000 a day, so a large machine is sized by its operator, not by its core count.
 */
export const MAX_DEFAULT_SHARDS = 16;

/**
 * The memory each shard process `SHARD_PROCESSES=auto` runs is given: about 120 MB idle, some 350–400 MB with 250
 * voices playing (docs/performance.md), and room for the system beside them. A machine (or a container's memory
 * limit) with less than twice this runs one process, which idles at about 120 MB.
 */
export const SHARD_PROCESS_MEMORY_BYTES = 512 * 1024 * 1024;

/** The variable that asks `npm start` for shard processes: a number, or `auto` (sized to the machine). */
export const SHARD_PROCESSES_OPTION = 'SHARD_PROCESSES';

/** What a machine gives Herald: the cores it may use and the memory it may take. */
export interface MachineShape {
  /** `os.availableParallelism()`. */
  readonly cores: number;
  /** The container's memory limit when there is one, else the machine's memory (see machineShape). */
  readonly memoryBytes: number;
}

/**
 * How many shard processes `npm start` runs on this machine. By default none: one process, which is what a bot of a
 * few dozen, or a few hundred, servers needs (from the bundle `npm start` runs, it idles at about 120 MB against
 * 580 MB for four shard processes, is back in voice 0.4–0.5 s after it starts again, and pays a sentence once;
 * docs/scaling.md has the figures and the commands that print them). `SHARD_PROCESSES=N` runs N shard processes (one shard each) and their manager;
 * `SHARD_PROCESSES=auto` sizes them to the machine: twice the cores it may use (on two cores, four shards held the
 * most voices), at most {@link MAX_DEFAULT_SHARDS}, and no more than its memory holds at
 * {@link SHARD_PROCESS_MEMORY_BYTES} each. Undefined: one process, as with the operator's own `SHARD_COUNT` or
 * `SHARD_IDS` (which `npm run start:shards` runs), in a process the sharding manager spawned, or where `auto` finds
 * room for only one. An invalid value is reported by {@link parseShardConfig}.
 */
export function defaultShardProcesses(
  env: Readonly<Record<string, string | undefined>>,
  machine: MachineShape,
): number | undefined {
  const set = (name: string) => (env[name]?.trim() ?? '') !== '';
  if (set('SHARDING_MANAGER') || set('SHARD_COUNT') || set('SHARD_IDS')) return undefined;
  const asked = env[SHARD_PROCESSES_OPTION]?.trim().toLowerCase() ?? '';
  if (asked === '') return undefined;
  if (asked !== 'auto') {
    const count = Number(asked);
    return /^\d+$/.test(asked) && count >= 2 && count <= MAX_SHARD_COUNT ? count : undefined;
  }
  const count = Math.min(
    MAX_DEFAULT_SHARDS,
    2 * Math.floor(machine.cores),
    Math.floor(machine.memoryBytes / SHARD_PROCESS_MEMORY_BYTES),
  );
  return count >= 2 && machine.cores >= 2 ? count : undefined;
}

/** Parses `SHARD_COUNT` and `SHARD_IDS` (or, under the ShardingManager, the shard it spawned this process for). */
export function parseShardConfig(env: Readonly<Record<string, string | undefined>>): ShardConfigResult {
  const value = (name: string): string | undefined => {
    const raw = env[name]?.trim();
    return raw === undefined || raw === '' ? undefined : raw;
  };
  const problems: string[] = [];
  const countText = value('SHARD_COUNT');
  const idsText = value('SHARD_IDS');
  const processesText = value(SHARD_PROCESSES_OPTION);
  if (value('SHARDING_MANAGER') === undefined && processesText !== undefined) {
    const processes = Number(processesText);
    if (
      processesText.toLowerCase() !== 'auto' &&
      (!/^\d+$/.test(processesText) || processes < 1 || processes > MAX_SHARD_COUNT)
    ) {
      problems.push(
        `SHARD_PROCESSES must be a whole number from 1 to ${MAX_SHARD_COUNT}, or auto (twice the cores, as the memory holds); unset runs one process.`,
      );
    } else if (countText !== undefined || idsText !== undefined) {
      problems.push(
        'SHARD_PROCESSES asks npm start for shard processes; SHARD_COUNT and SHARD_IDS name them for npm run start:shards. Set one or the other.',
      );
    }
    if (problems.length > 0) return { ok: false, problems };
  }

  // discord.js's ShardingManager sets SHARDING_MANAGER, SHARDS (this process's id) and SHARD_COUNT in the child.
  if (value('SHARDING_MANAGER') !== undefined) {
    const count = Number(countText);
    const id = Number(value('SHARDS'));
    if (!Number.isSafeInteger(count) || !Number.isSafeInteger(id) || id < 0 || id >= count) {
      return {
        ok: false,
        problems: ['SHARDS and SHARD_COUNT from the sharding manager do not name a shard.'],
      };
    }
    return { ok: true, value: { count, ids: [id], managed: true } };
  }

  if (countText === undefined) {
    if (idsText !== undefined)
      problems.push('SHARD_IDS needs SHARD_COUNT: the total number of shards of the bot.');
    return problems.length > 0 ? { ok: false, problems } : { ok: true, value: ONE_SHARD };
  }
  let count: number | 'auto' = 'auto';
  if (countText.toLowerCase() !== 'auto') {
    count = Number(countText);
    if (!/^\d+$/.test(countText) || count < 1 || count > MAX_SHARD_COUNT) {
      problems.push(
        `SHARD_COUNT must be a whole number from 1 to ${MAX_SHARD_COUNT}, or auto (Discord's advice).`,
      );
      return { ok: false, problems };
    }
  }
  if (idsText === undefined) return { ok: true, value: { count, ids: undefined, managed: false } };
  if (count === 'auto') {
    problems.push(
      'SHARD_IDS needs a fixed SHARD_COUNT (a number): with auto, machines could disagree on the count and two of them run the same shard.',
    );
    return { ok: false, problems };
  }
  const ids = parseShardIds(idsText, count);
  if (!ids.ok) return { ok: false, problems: [ids.problem] };
  return { ok: true, value: { count, ids: ids.value, managed: false } };
}

/** Parses `SHARD_IDS` (`0-7`, `8-15`, `0,2,4-5`) against the shard count; ids sorted, each once. */
export function parseShardIds(
  text: string,
  count: number,
):
  | { readonly ok: true; readonly value: readonly number[] }
  | { readonly ok: false; readonly problem: string } {
  const ids = new Set<number>();
  for (const part of text.split(',').map((p) => p.trim())) {
    const match = /^(\d+)(?:\s*-\s*(\d+))?$/.exec(part);
    if (!match) {
      return {
        ok: false,
        problem: `SHARD_IDS has "${part}", which is not a shard id or a range: write ids and ranges such as 0-7 or 0,2,4-5.`,
      };
    }
    const first = Number(match[1]);
    const last = match[2] === undefined ? first : Number(match[2]);
    if (last < first) {
      return {
        ok: false,
        problem: `SHARD_IDS has the range ${part}, which runs backwards: write ${last}-${first}.`,
      };
    }
    if (last >= count) {
      return {
        ok: false,
        problem: `SHARD_IDS has ${last}, but with SHARD_COUNT=${count} shard ids go from 0 to ${count - 1}.`,
      };
    }
    for (let id = first; id <= last; id += 1) ids.add(id);
  }
  return { ok: true, value: [...ids].sort((a, b) => a - b) };
}

/** The shard ids a process group runs, once the count is known. */
export function shardIdsOf(config: ShardConfig, count: number): readonly number[] {
  return config.ids ?? Array.from({ length: count }, (_, id) => id);
}

/** Discord's rule: a server belongs to shard `(guild_id >> 22) % shard_count`. */
export function shardOfGuild(guildId: string, count: number): number {
  return Number((BigInt(guildId) >> 22n) % BigInt(count));
}
