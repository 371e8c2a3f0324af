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
  bus: Pick<Bus, "claimEnvelopes">;
  stream: string;
  health: DependencyHealth;
  logger: Logger;
}

/**
 * Entry id → the entry that took its envelope first, for the entries that are duplicates. One round trip for the
 * whole read. When Redis cannot answer, no entry is a duplicate: they all run (fail open; the coordinator still
 * drops a stale outcome, where skipping on a guess could strand the step).
 */
export async function findDuplicates(entries: readonly BusEntry[], deps: DuplicateDeps): Promise<Map<string, string>> {
  const duplicates = new Map<string, string>();
  if (entries.length === 0) return duplicates;
  try {
    const holders = await deps.bus.claimEnvelopes(deps.stream, entries);
    entries.forEach((entry, index) => {
      const holder = holders[index];
      if (holder && holder !== entry.id) duplicates.set(entry.id, holder);
    });
  } catch (error) {
    if (deps.health.absorb(error)) deps.logger.debug({ err: error }, "could not claim envelopes in an outage; running the entries");
    else deps.logger.warn({ err: error, entryIds: entries.map((e) => e.id) }, "could not claim envelopes; running the entries");
  }
  return duplicates;
}
