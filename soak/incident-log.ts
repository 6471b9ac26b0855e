/**
 * What Herald logged about a server around a silent incident: the soak runs Herald at `info` into a file, and an
 * incident carries the lines of its server's guild from a minute before it to a little after, so that a rare one
 * (one in an hour's run) can be explained from the run that found it rather than hoped for again under a replay.
 */
import { readFileSync } from 'node:fs';
import type { SilentIncident } from './tracker.ts';

/** Lines kept before an incident, and after it. */
const BEFORE_MS = 60_000;
const AFTER_MS = 20_000;
/** At most this many lines an incident: the last ones before it and at most {@link MAX_AFTER} after, in order. */
const MAX_LINES = 80;
const MAX_AFTER = 20;
/** A line's fields shown as they are; the rest are left out (a stack says where, the message already says what). */
const LEFT_OUT = new Set(['time', 'level', 'pid', 'shard', 'component', 'msg', 'guild']);

/**
 * Each of `incidents` with {@link linesAbout} its server (`guildIdOf` its index) in Herald's log `file`, read once
 * for them all (an hour's log at `debug` runs to tens of MB); an unreadable file gives each none.
 */
export function withHeraldLog<T extends SilentIncident>(
  file: string,
  incidents: readonly T[],
  guildIdOf: (guild: number) => string,
): (T & { readonly heraldLog: readonly string[] })[] {
  if (incidents.length === 0) return [];
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    // No log to tell from: the incidents stand on their own.
  }
  return incidents.map((incident) => ({
    ...incident,
    heraldLog: linesAbout(text, guildIdOf(incident.guild), incident.at),
  }));
}

/**
 * The lines of Herald's JSON log `text` about `guildId` (its `guild` field) between a minute before `at` (ms since
 * the epoch) and 20 s after it, each shortened to `HH:MM:SS.mmm level component: msg {other fields}`. Lines that are
 * not JSON (a crash's stack) are skipped.
 */
function linesAbout(text: string, guildId: string, at: number): string[] {
  const before: string[] = [];
  const after: string[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes(guildId)) continue;
    const entry = parse(line);
    if (!entry || entry.guild !== guildId || typeof entry.time !== 'string') continue;
    const time = Date.parse(entry.time);
    if (time >= at - BEFORE_MS && time <= at) before.push(shorten(entry));
    else if (time > at && time <= at + AFTER_MS) after.push(shorten(entry));
  }
  const kept = after.slice(0, MAX_AFTER);
  return [...before.slice(-(MAX_LINES - kept.length)), ...kept];
}

function parse(line: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function shorten(entry: Record<string, unknown>): string {
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(entry)) {
    if (LEFT_OUT.has(key)) continue;
    if (value && typeof value === 'object' && 'stack' in value) {
      const { stack: _stack, ...error } = value as Record<string, unknown>;
      rest[key] = error;
    } else rest[key] = value;
  }
  const fields = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : '';
  const line = `${String(entry.time).slice(11, 23)} ${String(entry.level)} ${String(entry.component ?? '-')}: ${String(entry.msg)}${fields}`;
  return line.length > 400 ? `${line.slice(0, 399)}…` : line;
}
