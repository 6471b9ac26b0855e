import {
  describeHolder,
  leaseIsLive,
  type ShardClaim,
  type ShardLeaseHolder,
  standsInTheWay,
} from '../shard/lease.ts';
import type { DoctorCheck } from './doctor-check.ts';

/**
 * `npm run doctor`'s row saying which Heralds run on this database now (their shard leases), and whether
 * `npm start` here would start or wait for them. Waiting for the same shards is a standby, not a fault; another
 * shard count is: no process of this configuration can start while it runs.
 */
export function shardsRunningCheck(
  leases: readonly ShardLeaseHolder[],
  claim: ShardClaim,
  here: { readonly host: string; readonly now: number; readonly isAlive?: (pid: number) => boolean },
): DoctorCheck {
  const name = 'Shards running';
  const live = leases.filter((lease) => leaseIsLive(lease, here.now, here));
  if (live.length === 0) {
    return { name, status: 'ok', detail: 'none: no Herald runs on this database now' };
  }
  const running = live.map(describeHolder).join('; ');
  const otherCount = live.filter((lease) => lease.count !== claim.count || claim.count === 'auto');
  if (otherCount.length > 0) {
    const counts = [...new Set(otherCount.map((lease) => String(lease.count)))].join(', ');
    return {
      name,
      status: 'fail',
      blocks: false,
      detail: `${running}: SHARD_COUNT=${counts} there, ${String(claim.count)} here, so npm start here would wait until they stop`,
      fix: 'Give every process of the bot the same numeric SHARD_COUNT (auto only for a single machine), or stop the others first.',
    };
  }
  const waitFor = live.filter((lease) => standsInTheWay(lease, claim));
  return {
    name,
    status: 'ok',
    detail:
      waitFor.length > 0
        ? `${running}; npm start here would wait for them as a standby, and take over when they stop`
        : `${running}; this configuration's shards are free`,
  };
}
