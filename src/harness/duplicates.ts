/**
 * Telling a second publication of an envelope from the entry that carried it first, before anything runs: the
 * outbox can put one envelope on a stream twice (see `bus/envelope-claims.ts`), and both copies would run the same
 * turn, perhaps at once. A redelivery of the entry that holds the claim is not a duplicate: it runs (after the
 * TurnCheck, as any reclaimed entry).
 */
import type { Bus, BusEntry } from "../bus/bus.js";
import type { DependencyHealth } from "../process/dependency-health.js";
import type { Logger } from "../logger.js";

export interface DuplicateDeps {
  bus: Pick<Bus, "claimEnvelopes" | "supersededTurns">;
  stream: string;
  health: DependencyHealth;
  logger: Logger;
}

/** What the claims found: entries that are second copies (→ the entry that took the envelope), and stale turns. */
export interface Screening {
  duplicates: Map<string, string>;
  /** Reclaimed entries whose step has since been handed a later turn (bus/turn-marks.ts): not to be run again. */
  superseded: Set<string>;
}

/**
 * Claims the entries' envelopes in one round trip; a first delivery records its turn mark in the same pipeline, and a
 * reclaim (`redelivered`) also asks the marks whether a later turn has come since. When Redis cannot answer, no
 * entry is a duplicate or stale: they all run (fail open; the coordinator still drops a stale outcome, where
 * skipping on a guess could strand the step).
 */
export async function screenEntries(entries: readonly BusEntry[], redelivered: boolean, deps: DuplicateDeps): Promise<Screening> {
  const screening: Screening = { duplicates: new Map(), superseded: new Set() };
  if (entries.length === 0) return screening;
  const [claims, stale] = await Promise.allSettled([
    deps.bus.claimEnvelopes(deps.stream, entries, { recordTurns: !redelivered }),
    redelivered ? deps.bus.supersededTurns(deps.stream, entries) : Promise.resolve([]),
  ]);
  if (claims.status === "fulfilled") {
    entries.forEach((entry, index) => {
      const holder = claims.value[index];
      if (holder && holder !== entry.id) screening.duplicates.set(entry.id, holder);
    });
  } else {
    unanswered(claims.reason, "claim envelopes", entries, deps);
  }
  if (stale.status === "fulfilled") entries.forEach((entry, index) => stale.value[index] && screening.superseded.add(entry.id));
  else unanswered(stale.reason, "read turn marks", entries, deps);
  return screening;
}

function unanswered(error: unknown, what: string, entries: readonly BusEntry[], deps: DuplicateDeps): void {
  if (deps.health.absorb(error)) deps.logger.debug({ err: error }, `could not ${what} in an outage; running the entries`);
  else deps.logger.warn({ err: error, entryIds: entries.map((e) => e.id) }, `could not ${what}; running the entries`);
}
