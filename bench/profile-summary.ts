/**
 * Where Herald's CPU went: sums the self time of a V8 CPU profile (`npm run bench -- --cpu-prof` writes them to
 * bench/results/profiles) by function and by area. Run: `node bench/profile-summary.ts <file.cpuprofile>
 * [--busiest=SECONDS | --window=FROM,TO] [--lines=PATTERN]`: the busiest span of that length (e.g. a P4 step), or
 * the span given; `--lines` adds the source lines of the files whose URL matches PATTERN (a regular expression,
 * e.g. `/src/|/commands/`), by self time (V8's position ticks: a builtin such as `toLocaleString` counts on the line
 * that called it).
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  positionTicks?: { line: number; ticks: number }[];
}

const args = process.argv.slice(2);
const flag = (name: string) => args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const file = args.find((arg) => !arg.startsWith('--'));
if (!file) {
  console.error(
    'usage: node bench/profile-summary.ts <file.cpuprofile> [--busiest=SECONDS | --window=FROM,TO]',
  );
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
};
const idle = new Set(
  profile.nodes.filter((node) => node.callFrame.functionName === '(idle)').map((node) => node.id),
);
// Each sample's time since the profile started, in µs.
const at: number[] = [];
profile.timeDeltas.reduce((sum, delta, i) => {
  at[i] = sum + delta;
  return sum + delta;
}, 0);
// --busiest=S: only the S seconds with the most busy CPU (a P4 step, rather than the joins before it).
const busiest = Number(flag('busiest') ?? 0) * 1e6;
let [from, to] = [0, Number.POSITIVE_INFINITY];
// --window=FROM,TO: only that span of the profile, in seconds since it started (e.g. a P4 step after its start).
const window = flag('window');
if (window) [from, to] = window.split(',').map((seconds) => Number(seconds) * 1e6) as [number, number];
if (busiest > 0) {
  let best = -1;
  let busy = 0;
  let start = 0;
  for (let end = 0; end < profile.samples.length; end++) {
    if (!idle.has(profile.samples[end] ?? -1)) busy += profile.timeDeltas[end] ?? 0;
    while ((at[end] ?? 0) - (at[start] ?? 0) > busiest) {
      if (!idle.has(profile.samples[start] ?? -1)) busy -= profile.timeDeltas[start] ?? 0;
      start++;
    }
    if (busy > best) [best, from, to] = [busy, at[start] ?? 0, at[end] ?? 0];
  }
  console.log(
    `the busiest ${busiest / 1e6} s: from ${(from / 1e6).toFixed(1)} s to ${(to / 1e6).toFixed(1)} s`,
  );
}
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => {
  const t = at[i] ?? 0;
  if (t < from || t > to) return;
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const byId = new Map(profile.nodes.map((node) => [node.id, node]));

/** A rough area for a frame, from its function and file. */
function areaOf(node: ProfileNode): string {
  const { functionName: name, url } = node.callFrame;
  if (name === '(idle)') return 'idle';
  if (name === '(garbage collector)') return 'garbage collection';
  if (name === '(program)') return 'V8/native (program)';
  if (/createCipheriv|Cipher|setAAD|getAuthTag|final|update/.test(name) && /crypto|internal/.test(url))
    return 'crypto (AEAD)';
  if (/^(send|_send|doSend|sendto)$/.test(name) || /dgram/.test(url)) return 'UDP send';
  if (/@discordjs\/voice/.test(url)) return '@discordjs/voice (player, networking)';
  if (/prism-media|ogg|opus/i.test(url)) return 'Ogg/Opus demux';
  if (/sqlite/i.test(url) || /DatabaseSync|StatementSync/.test(name)) return 'SQLite';
  if (/undici/.test(url)) return 'HTTP (TTS download)';
  if (/discord\.js|@discordjs\/(ws|rest)|ws\/lib/.test(url)) return 'discord.js gateway/REST';
  if (/timers|listOnTimeout|processTimers/.test(url + name)) return 'timers';
  if (/\/src\/|\/commands\//.test(url)) return 'Herald';
  if (/node:|internal/.test(url) || url === '') return `node internals (${name || 'anonymous'})`;
  return 'other';
}

const byArea = new Map<string, number>();
const byFunction = new Map<string, number>();
let total = 0;
for (const [id, us] of selfUs) {
  const node = byId.get(id);
  if (!node) continue;
  const area = areaOf(node);
  if (area === 'idle') continue;
  total += us;
  byArea.set(area, (byArea.get(area) ?? 0) + us);
  const key = `${node.callFrame.functionName || '(anonymous)'} ${node.callFrame.url.split('/').slice(-2).join('/')}:${node.callFrame.lineNumber}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + us);
}
const top = (map: Map<string, number>, n: number) =>
  [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(
      ([name, us]) =>
        `${((us / total) * 100).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}`,
    )
    .join('\n');
console.log(
  `busy CPU in profile: ${(total / 1000).toFixed(0)} ms\n\nby area:\n${top(byArea, 15)}\n\nby function:\n${top(byFunction, 25)}`,
);

// --lines=PATTERN: a node's self time shared among its lines as its position ticks are.
const linesOf = flag('lines');
if (linesOf) {
  const pattern = new RegExp(linesOf);
  const byLine = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node || !pattern.test(node.callFrame.url)) continue;
    const ticks = node.positionTicks ?? [{ line: node.callFrame.lineNumber + 1, ticks: 1 }];
    const all = ticks.reduce((sum, tick) => sum + tick.ticks, 0) || 1;
    for (const tick of ticks) {
      const key = `${node.callFrame.url.split('/').slice(-2).join('/')}:${tick.line} (${node.callFrame.functionName || 'anonymous'})`;
      byLine.set(key, (byLine.get(key) ?? 0) + (us * tick.ticks) / all);
    }
  }
  console.log(`\nby line (${linesOf}):\n${top(byLine, 25)}`);
}
