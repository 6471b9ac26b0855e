/**
 * The characters queued and not yet reserved in every server of a process, kept as the queues change (an
 * utterance counts from its enqueue until its synthesis starts or it is dropped), so a /speak reads them at once.
 * Summing every queue on each /speak was a pass over every server: in a rush of 1,000 members over four processes,
 * 250 × 250 queue reads a process (about 0.1 ms of each /speak's CPU, by a profile of that rush). What it reads is the
 * budget's `QueuedCharacters` (the budget imports this folder, not the other way round).
 */
export class QueuedTally {
  #all = 0;
  readonly #byGuild = new Map<string, number>();
  readonly #byMember = new Map<string, number>();

  /** Counts `characters` of `userId`'s queued in `guildId`. */
  add(guildId: string, userId: string, characters: number): void {
    this.#all += characters;
    bump(this.#byGuild, guildId, characters);
    bump(this.#byMember, userId, characters);
  }

  /** Takes back what {@link add} counted (a synthesis started, or the utterance was dropped). */
  remove(guildId: string, userId: string, characters: number): void {
    this.#all -= characters;
    bump(this.#byGuild, guildId, -characters);
    bump(this.#byMember, userId, -characters);
  }

  /** For a /speak of `userId` in `guildId`: the member's in every server, everyone's in it, everyone's everywhere. */
  of(guildId: string, userId: string): { member: number; guild: number; all: number } {
    return {
      member: this.#byMember.get(userId) ?? 0,
      guild: this.#byGuild.get(guildId) ?? 0,
      all: this.#all,
    };
  }
}

/** Adds `by` to `key`'s count; a count back at zero is forgotten, so the maps hold only what is queued. */
function bump(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next === 0) counts.delete(key);
  else counts.set(key, next);
}
