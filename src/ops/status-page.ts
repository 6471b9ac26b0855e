import { type BudgetStatus, formatUsd, type LedgerEntry } from '../budget/index.ts';
import { describeStop, RESUME_HINT } from './health.ts';
import type { LiveView, RecentProblem, SessionView, ShardView } from './state.ts';

/** What the status page reads from the database: the budget's state and the ledger, or why it could not. */
export type StoredView =
  | {
      readonly status: 'read';
      readonly budget: BudgetStatus;
      /** Ledger rows of the last {@link DAYS_SHOWN} days. */
      readonly ledger: readonly LedgerEntry[];
    }
  | {
      readonly status: 'unreadable';
      /** One sentence on why (never a secret: the endpoint scrubs every answer). */
      readonly detail: string;
    };

/** Everything the status page shows, read at the moment it is asked for. */
export interface StatusPageData extends LiveView {
  /** Ms since the epoch. */
  readonly now: number;
  readonly stored: StoredView;
}

/** One bar of a spend chart. */
export interface SpendBucket {
  /** Start of the bucket, ms since the epoch (UTC). */
  readonly start: number;
  readonly usd: number;
  readonly characters: number;
  readonly generations: number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** Hours in the hourly spend chart. */
export const HOURS_SHOWN = 24;
/** Days in the daily spend chart (and how far back the page reads the ledger). */
export const DAYS_SHOWN = 14;

/** Spend per bucket of `sizeMs` for the `count` buckets ending with the one holding `now`; UTC-aligned. */
export function spendBuckets(
  ledger: readonly LedgerEntry[],
  now: number,
  sizeMs: number,
  count: number,
): SpendBucket[] {
  const last = Math.floor(now / sizeMs) * sizeMs;
  const first = last - (count - 1) * sizeMs;
  const buckets = Array.from({ length: count }, (_, i) => ({
    start: first + i * sizeMs,
    usd: 0,
    characters: 0,
    generations: 0,
  }));
  for (const entry of ledger) {
    const index = Math.floor((entry.at - first) / sizeMs);
    const bucket = buckets[index];
    if (!bucket) continue;
    // Spend counts the reported cost, or the reservation's estimate when the service sent none (as /budget does).
    bucket.usd += entry.costUsd ?? entry.estimatedCostUsd ?? 0;
    bucket.characters += entry.characters;
    bucket.generations += 1;
  }
  return buckets;
}

/**
 * The status page: one self-contained HTML document, charts drawn as inline SVG, no script. While the database
 * cannot be read, it says so where the budget and the spend would be, and shows the rest (live, from memory).
 */
export function renderStatusPage(data: StatusPageData): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Herald status</title>
<style>${STYLE}</style>
</head>
<body>
<h1>Herald</h1>
<p class="muted">As of ${iso(data.now)} · ${gatewayLine(data)}</p>
${data.stored.status === 'read' ? budgetSections(data.now, data.stored.budget, data.stored.ledger) : unreadableSection(data.stored.detail)}
${data.shards === undefined ? '' : `<section>\n<h2>Shards</h2>\n${shardsTable(data.shards)}\n</section>\n`}<section>
<h2>Speaking now</h2>
${sessionsTable(data.sessions)}
</section>
<section>
<h2>Latest warnings and errors</h2>
${problemsList(data.problems)}
</section>
</body>
</html>
`;
}

/** The balance against the floor, the budget's state, and the spend charts. */
function budgetSections(now: number, budget: BudgetStatus, ledger: readonly LedgerEntry[]): string {
  const hourly = spendBuckets(ledger, now, HOUR_MS, HOURS_SHOWN);
  const daily = spendBuckets(ledger, now, DAY_MS, DAYS_SHOWN);
  const balance = budget.balanceUsd;
  const state =
    budget.status === 'active'
      ? `<p id="budget-state" data-state="active" class="ok">Speaking: spending is allowed.</p>`
      : `<p id="budget-state" data-state="blocked" data-reason="${budget.reason}" class="bad">Stopped since ${iso(budget.since)}: ${describeStop(budget.reason)}</p><p id="resume">${escapeHtml(RESUME_HINT)}</p>`;
  return `<section>
<h2>Budget</h2>
<p class="big">Balance <strong id="balance" data-usd="${balance ?? ''}">${balance === undefined ? 'not seen yet' : formatUsd(balance)}</strong>
against the floor <strong id="floor" data-usd="${budget.floorUsd}">${formatUsd(budget.floorUsd)}</strong>${
    budget.warnUsd === undefined ? '' : ` (warning at ${formatUsd(budget.warnUsd)})`
  }</p>
${balanceBar(balance, budget.floorUsd, budget.warnUsd)}
<p class="muted">${budget.balanceSeenAt === undefined ? '' : `Balance seen ${iso(budget.balanceSeenAt)}. `}Price ${
    budget.pricePerCharUsd === undefined
      ? 'not known yet'
      : `${formatUsd(budget.pricePerCharUsd)} per character`
  } (${budget.priceSource}). In flight: ${budget.inFlight} (${formatUsd(budget.reservedUsd)} reserved).</p>
${state}
</section>
<section>
<h2>Spend per hour (last ${HOURS_SHOWN} h, UTC)</h2>
${barChart('spend-hourly', hourly, (start) => new Date(start).toISOString().slice(11, 13))}
<h2>Spend per day (last ${DAYS_SHOWN} days, UTC)</h2>
${barChart('spend-daily', daily, (start) => new Date(start).toISOString().slice(5, 10))}
</section>`;
}

/** In place of the budget and the spend while the database, where they are kept, cannot be read. */
function unreadableSection(detail: string): string {
  return `<section>
<h2>Budget</h2>
<p id="database" data-state="unreadable" class="bad">${escapeHtml(detail)}</p>
<p class="muted">The balance, the budget's state and the spend are kept in the database: they show again when it answers.</p>
</section>`;
}

/** The login form shown (with 401) when `METRICS_TOKEN` is set and the request carries no valid token. */
export function renderLoginPage(failed: boolean): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Herald status: sign in</title><style>${STYLE}</style></head>
<body>
<h1>Herald</h1>
<form method="post" action="/login">
<p>This page needs the operator's <code>METRICS_TOKEN</code>.</p>
${failed ? '<p class="bad" id="login-failed">That token is not right.</p>' : ''}
<label>Token <input type="password" name="token" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form>
</body>
</html>
`;
}

const STYLE = `
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; color: #1d232a; }
h1 { margin-bottom: 0; } h2 { font-size: 1.05rem; margin-top: 1.6rem; }
section { border-top: 1px solid #d8dde3; }
.muted { color: #5c6670; } .big { font-size: 1.2rem; }
.ok { color: #17803d; } .bad { color: #b42318; font-weight: 600; }
table { border-collapse: collapse; } td, th { padding: .25rem .8rem .25rem 0; text-align: left; }
svg text { font: 10px system-ui, sans-serif; fill: #5c6670; }
`;

function balanceBar(balance: number | undefined, floor: number, warn: number | undefined): string {
  if (balance === undefined) return '';
  const top = Math.max(balance, warn ?? 0, floor) * 1.1 || 1;
  const x = (usd: number): number => Math.round((Math.max(0, usd) / top) * 600);
  const colour = balance <= floor ? '#b42318' : warn !== undefined && balance <= warn ? '#c4820e' : '#17803d';
  return `<svg id="balance-bar" width="600" height="28" viewBox="0 0 600 28" role="img" aria-label="balance against the floor">
<rect x="0" y="4" width="600" height="16" fill="#eef1f4"/>
<rect x="0" y="4" width="${x(balance)}" height="16" fill="${colour}"/>
<line x1="${x(floor)}" x2="${x(floor)}" y1="0" y2="24" stroke="#1d232a" stroke-width="2"/>
${warn === undefined ? '' : `<line x1="${x(warn)}" x2="${x(warn)}" y1="0" y2="24" stroke="#c4820e" stroke-dasharray="3 2"/>`}
</svg>`;
}

/** A bar chart as SVG; each bar carries its figures as data attributes and a tooltip. */
function barChart(id: string, buckets: readonly SpendBucket[], label: (start: number) => string): string {
  const width = 720;
  const height = 140;
  const chartHeight = 110;
  const max = Math.max(...buckets.map((bucket) => bucket.usd), 0);
  const slot = width / buckets.length;
  const bars = buckets
    .map((bucket, i) => {
      const h = max === 0 ? 0 : Math.max(bucket.usd > 0 ? 2 : 0, (bucket.usd / max) * (chartHeight - 12));
      const x = i * slot;
      return `<g class="bar" data-start="${new Date(bucket.start).toISOString()}" data-usd="${bucket.usd}" data-generations="${bucket.generations}" data-characters="${bucket.characters}">
<rect x="${(x + 2).toFixed(1)}" y="${(chartHeight - h).toFixed(1)}" width="${(slot - 4).toFixed(1)}" height="${h.toFixed(1)}" fill="#3867d6"><title>${label(bucket.start)}: ${formatUsd(bucket.usd)}, ${bucket.generations} generations, ${bucket.characters} characters</title></rect>
${i % Math.ceil(buckets.length / 12) === 0 ? `<text x="${(x + slot / 2).toFixed(1)}" y="${height - 14}" text-anchor="middle">${label(bucket.start)}</text>` : ''}
</g>`;
    })
    .join('\n');
  const total = buckets.reduce((sum, bucket) => sum + bucket.usd, 0);
  return `<svg id="${id}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="spend chart" data-total-usd="${total}">
<line x1="0" x2="${width}" y1="${chartHeight}" y2="${chartHeight}" stroke="#d8dde3"/>
${bars}
<text x="0" y="10">max ${formatUsd(max)} · total ${formatUsd(total)}</text>
</svg>`;
}

/** The gateway in the page's first line: one connection, or how many of the shards' are connected. */
function gatewayLine(data: StatusPageData): string {
  if (data.shards === undefined) {
    return `gateway ${data.gatewayConnected ? '<span class="ok">connected</span>' : '<span class="bad">not connected</span>'}`;
  }
  const connected = data.shards.filter((shard) => shard.status === 'answered' && shard.gatewayConnected);
  const all = connected.length === data.shards.length;
  return `gateway <span id="gateway" class="${all ? 'ok' : 'bad'}">${connected.length} of ${data.shards.length} shards connected</span>`;
}

/** Each shard process: its gateway and voice sessions, or why it did not say (never a blank or a wait). */
function shardsTable(shards: readonly ShardView[]): string {
  const rows = shards
    .map((shard) =>
      shard.status === 'answered'
        ? `<tr data-shard="${shard.id}" data-state="answered" data-gateway="${shard.gatewayConnected ? 'connected' : 'not-connected'}"><td>${shard.id}</td><td class="${shard.gatewayConnected ? 'ok' : 'bad'}">${shard.gatewayConnected ? 'connected' : 'not connected'}</td><td>${shard.sessions}</td></tr>`
        : shard.status === 'standing-by'
          ? `<tr data-shard="${shard.id}" data-state="standing-by"><td>${shard.id}</td><td colspan="2">${escapeHtml(shard.detail)}</td></tr>`
          : `<tr data-shard="${shard.id}" data-state="silent"><td>${shard.id}</td><td class="bad" colspan="2">no answer: ${escapeHtml(shard.detail)}</td></tr>`,
    )
    .join('\n');
  return `<table id="shards"><thead><tr><th>Shard</th><th>Gateway</th><th>Voice channels</th></tr></thead>
<tbody>${rows}</tbody></table>`;
}

function sessionsTable(sessions: readonly SessionView[]): string {
  if (sessions.length === 0) return '<p id="sessions" class="muted">Herald is in no voice channel.</p>';
  const sharded = sessions.some((session) => session.shard !== undefined);
  const rows = sessions
    .map(
      (session) =>
        `<tr${session.shard === undefined ? '' : ` data-shard="${session.shard}"`}><td>${escapeHtml(session.guildName)}</td><td>${escapeHtml(session.channelName)}</td><td class="queue">${session.queueDepth}</td><td>${escapeHtml(session.player)}</td><td>${escapeHtml(session.connection)}</td>${sharded ? `<td>${session.shard ?? ''}</td>` : ''}</tr>`,
    )
    .join('\n');
  return `<table id="sessions"><thead><tr><th>Server</th><th>Voice channel</th><th>Queue</th><th>Player</th><th>Connection</th>${sharded ? '<th>Shard</th>' : ''}</tr></thead>
<tbody>${rows}</tbody></table>`;
}

function problemsList(problems: readonly RecentProblem[]): string {
  if (problems.length === 0) return '<p id="problems" class="muted">None since Herald started.</p>';
  const items = problems
    .map(
      (problem) =>
        `<li class="${problem.level}"><span class="muted">${iso(problem.at)}</span>${problem.shard === undefined ? '' : ` <span class="muted">${problem.shard === 'manager' ? 'manager' : `shard ${problem.shard}`}</span>`} <strong>${problem.level}</strong> ${escapeHtml(problem.message)}${
          problem.detail === undefined ? '' : ` — <code>${escapeHtml(problem.detail)}</code>`
        }</li>`,
    )
    .join('\n');
  return `<ul id="problems">${items}</ul>`;
}

function iso(at: number): string {
  return new Date(at).toISOString().replace('T', ' ').slice(0, 19);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
