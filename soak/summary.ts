import type { SoakResult } from './run.ts';

/** The soak's summary as a table, then every violated invariant (at most 30 lines of them). */
export function formatSummary(r: SoakResult): string {
  const o = r.speak.outcomes;
  const faults = Object.entries(r.faults)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ');
  const rows: [string, string][] = [
    [
      'machine',
      `${r.machine.cpus} cores, Node ${r.machine.node}, commit ${r.machine.commit}, load ${r.machine.loadAverage.start.join(' ')} → ${r.machine.loadAverage.end.join(' ')}`,
    ],
    [
      'run',
      `${r.minutes} min, ${r.servers} servers, seed ${r.seed}; Herald on ${r.herald.database === 'postgres' ? 'PostgreSQL' : 'SQLite'}${r.herald.shards > 1 ? ` as ${r.herald.shards} shard processes` : ''}`,
    ],
    [
      '/speak',
      `${r.speak.sent} sent: ${o.heard} heard, ${o.refused} refused with a reason, ${o['failed-told']} failed and told, ${o['ended-told']} told by the session's end, ${o.dropped} dropped by /skip, /stop or /leave`,
    ],
    [
      'refusals',
      Object.entries(r.speak.refusals)
        .map(([why, n]) => `${why} ${n}`)
        .join(', ') || 'none',
    ],
    ['unanswered /speak', String(o.unanswered)],
    ['neither heard nor told', String(o['not-heard-not-told'])],
    ['auto-read messages', String(r.autoreadMessages)],
    [
      'other commands',
      Object.entries(r.commands)
        .filter(([name]) => name !== 'speak')
        .map(([name, n]) => `/${name} ${n}`)
        .join(', '),
    ],
    ['member voice moves', String(r.voiceMoves)],
    ['faults injected', `${Object.values(r.faults).reduce((sum, n) => sum + (n ?? 0), 0)}: ${faults}`],
    [
      'silent-server incidents',
      `${r.silentIncidents.filter((i) => i.kind === 'silent').length} (>10 s outside a fault's bounded wait), ${r.silentIncidents.filter((i) => i.kind === 'stuck').length} stuck (>60 s)`,
    ],
    [
      'ledger',
      `${r.ledger.rows} rows $${r.ledger.ledgerUsd.toFixed(6)}; service charged ${r.ledger.charged} $${r.ledger.chargedUsd.toFixed(6)}; uncertain rows ${r.ledger.uncertainRows} (up to $${r.ledger.uncertainUpToUsd.toFixed(6)}); lost rows ${r.ledger.lostRows}, rows never charged ${r.ledger.extraRows}`,
    ],
    [
      'Herald RSS',
      `${r.memory.rssMb.first} → ${r.memory.rssMb.last} MB (max ${r.memory.rssMb.max}), slope ${r.memory.rssMb.slopeMbPerHour} MB/h after warm-up`,
    ],
    [
      'Herald V8 heap in use',
      `${r.memory.heapMb.first} → ${r.memory.heapMb.last} MB (max ${r.memory.heapMb.max}), slope ${r.memory.heapMb.slopeMbPerHour} MB/h after warm-up`,
    ],
    [
      'Herald open files',
      `${r.memory.openFiles.first} → ${r.memory.openFiles.last} (max ${r.memory.openFiles.max}), slope ${r.memory.openFiles.slopePerHour}/h after warm-up`,
    ],
    [
      'voice',
      r.voice
        ? `${r.voice.packets} packets, ${r.voice.latePackets} more than a frame after the one before; ${r.voice.starvedFrames} frames of silence inside words (audio late) in ${r.voice.gaps} gaps; ${r.voice.slowStarts} starts held for a service slower than real time`
        : 'Herald’s /metrics did not answer',
    ],
    ['invariants', r.violations.length === 0 ? 'all held' : `${r.violations.length} violated`],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const table = rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n');
  const violations = r.violations.slice(0, 30).map((line) => `  ✗ ${line}`);
  if (r.violations.length > 30) violations.push(`  … and ${r.violations.length - 30} more`);
  for (const incident of r.silentIncidents.slice(0, 5)) {
    violations.push(
      `  Herald's log about server ${incident.guild}, from a minute before its ${incident.kind} incident at ${new Date(incident.at).toISOString().slice(11, 23)}:`,
      ...(incident.heraldLog.length > 0 ? incident.heraldLog : ['(nothing)']).map((line) => `    ${line}`),
    );
  }
  if (r.heraldLogFile) violations.push(`  Herald's whole log: ${r.heraldLogFile}`);
  return violations.length === 0 ? table : `${table}\n${violations.join('\n')}`;
}
