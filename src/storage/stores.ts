import { type AutoReadStore, createAutoReadStore } from '../autoread/settings.ts';
import { type BudgetStore, createBudgetStore } from '../budget/store.ts';
import { type CacheStore, createCacheStore } from '../cache/store.ts';
import { createMemberStore, type MemberStore } from '../members/store.ts';
import type { Database } from './database.ts';
import { createSettingsStore, type SettingsStore } from './index.ts';
import { createVoiceStateStore, type VoiceStateStore } from './voice-state.ts';

/** Every store Herald keeps, over one database. */
export interface Stores {
  /** Each server's and member's chosen voice. */
  readonly settings: SettingsStore;
  /** Auto-read settings, bound channels and opt-outs. */
  readonly autoread: AutoReadStore;
  /** The budget's ledger, reservations and stop. */
  readonly budget: BudgetStore;
  /** Each server's voice channel and queue, so a restart rejoins and finishes it. */
  readonly voiceState: VoiceStateStore;
  /** The audio cache's index and each server's choice. */
  readonly cache: CacheStore;
  /** Dictionaries, block lists, spoken names and temperatures. */
  readonly members: MemberStore;
}

/** Opens every store over `db`, each migrating its own tables. */
export async function openStores(db: Database): Promise<Stores> {
  return {
    settings: await createSettingsStore(db),
    autoread: await createAutoReadStore(db),
    budget: await createBudgetStore(db),
    voiceState: await createVoiceStateStore(db),
    cache: await createCacheStore(db),
    members: await createMemberStore(db),
  };
}
