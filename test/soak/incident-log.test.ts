import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { withHeraldLog } from '../../soak/incident-log.ts';

const GUILD = '1576049403112849720';
const OTHER = '1576049403087683836';
const AT = Date.parse('2026-11-28T02:28:07.000Z');
const line = (secondsFromAt: number, guild: string, msg: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    level: 'info',
    time: new Date(AT + secondsFromAt * 1000).toISOString(),
    pid: 1,
    shard: '0',
    component: 'voice',
    guild,
    ...extra,
    msg,
  });

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});
const logOf = (lines: string[]): string => {
  dir = mkdtempSync(join(tmpdir(), 'incident-log-'));
  const file = join(dir, 'herald.log');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
};

/** The lines of one incident at `at` in the log `file`, as the soak reads them. */
const linesAbout = (file: string, guildId: string, at: number): readonly string[] =>
  withHeraldLog(file, [{ guild: 0, kind: 'silent', at, waitedMs: 10_000, pending: 1 }], () => guildId)[0]
    ?.heraldLog ?? [];

describe('linesAbout', () => {
  it('keeps the server’s lines from a minute before the incident to 20 s after, shortened, in order', () => {
    const file = logOf([
      line(-90, GUILD, 'too early'),
      line(-30, GUILD, 'joined'),
      line(-29, OTHER, 'another server'),
      'not json at all, a crash stack',
      line(-5, GUILD, 'playback failed', {
        err: { type: 'AudioFormatError', message: 'cut', stack: 'AudioFormatError: cut\n    at x' },
      }),
      line(10, GUILD, 'voice session ended', { reason: 'idle' }),
      line(25, GUILD, 'too late'),
    ]);
    expect(linesAbout(file, GUILD, AT)).toEqual([
      '02:27:37.000 info voice: joined',
      '02:28:02.000 info voice: playback failed {"err":{"type":"AudioFormatError","message":"cut"}}',
      '02:28:17.000 info voice: voice session ended {"reason":"idle"}',
    ]);
  });

  it('keeps at most 80 lines: the last before the incident and at most 20 after', () => {
    const before = Array.from({ length: 100 }, (_, i) => line(-59 + i * 0.5, GUILD, `before ${i}`));
    const after = Array.from({ length: 30 }, (_, i) => line(1 + i * 0.5, GUILD, `after ${i}`));
    const lines = linesAbout(logOf([...before, ...after]), GUILD, AT);
    expect(lines).toHaveLength(80);
    expect(lines[0]).toMatch(/before 40$/);
    expect(lines[59]).toMatch(/before 99$/);
    expect(lines[60]).toMatch(/after 0$/);
    expect(lines.at(-1)).toMatch(/after 19$/);
  });

  it('gives nothing for a log that is not there', () => {
    expect(linesAbout('/nonexistent/herald.log', GUILD, AT)).toEqual([]);
  });
});
