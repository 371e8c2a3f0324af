/**
 * The harness's delivery loop: while not stopped, wait for a free slot, obey the flags, reclaim entries gone idle
 * under dead consumers (every half of `reclaimIdleMs`), and read new ones, as many as there are free slots. A
 * failed read backs off (up to 5 s); an outage is logged once, by the DependencyHealth.
 */
import type { Bus } from "../bus/bus.js";
import { outageBackoffMs, type DependencyHealth } from "../process/dependency-health.js";
import type { Logger } from "../logger.js";
import { sleep } from "../sleep.js";
import type { FlagsGate } from "./flags-gate.js";
import type { TurnDispatch } from "./turn-dispatch.js";
import type { TurnSlots } from "./turn-slots.js";
import type { TurnTally } from "./turn-tally.js";

/** Built once per harness. */
export interface DeliveryLoop {
  bus: Bus;
  stream: string;
  group: string;
  consumer: string;
  reclaimIdleMs: number;
  /** Aborted on stop: wakes the loop out of a blocking read, a back-off sleep or a wait for a free slot. */
  stop: AbortSignal;
  slots: TurnSlots;
  gate: FlagsGate;
  turns: TurnDispatch;
  tally: TurnTally;
  health: DependencyHealth;
  logger: Logger;
}

/** Resolves once stopped; turns still in flight are the shutdown's. */
export async function runDeliveryLoop(loop: DeliveryLoop): Promise<void> {
  const { stop, slots, gate } = loop;
  const reclaimEveryMs = Math.max(1, Math.floor(loop.reclaimIdleMs / 2));
  let nextReclaimAt = 0;
  let failures = 0;
  while (!stop.aborted) {
    await slots.waitForFree();
    if (stop.aborted) break;
    if (!gate.accepting()) {
      await gate.pauseWhileSwitchedOff(stop, slots.inFlight);
      continue;
    }
    // Reclaim runs in the loop rather than on its own timer so it never races a read for the same free slots.
    if (Date.now() >= nextReclaimAt) {
      await reclaim(loop);
      nextReclaimAt = Date.now() + reclaimEveryMs;
      if (slots.free() <= 0) continue;
    }
    const free = slots.free();
    try {
      const entries = await loop.bus.read({
        stream: loop.stream,
        group: loop.group,
        consumer: loop.consumer,
        count: free,
        blockMs: Math.max(1, Math.min(gate.readBlockMs, nextReclaimAt - Date.now())),
        signal: stop,
      });
      failures = 0;
      // Entries a read returns are already ours (pending under this consumer); running them now, within
      // the grace, is faster than leaving them for a reclaim even when a stop arrived meanwhile.
      await loop.turns.dispatch(entries, false);
    } catch (error) {
      if (stop.aborted) break;
      failures += 1;
      const backoffMs = outageBackoffMs(failures);
      if (loop.health.absorb(error)) loop.logger.debug({ err: error, backoffMs }, "read failed in an outage; backing off");
      else loop.logger.warn({ err: error, backoffMs }, "read failed; backing off");
      await sleep(backoffMs, stop);
    }
  }
}

/** Takes over entries idle past `reclaimIdleMs` (their consumer presumed dead), at most one per free slot. */
async function reclaim(loop: DeliveryLoop): Promise<void> {
  const free = loop.slots.free();
  if (free <= 0) return;
  try {
    const entries = await loop.bus.reclaim({ stream: loop.stream, group: loop.group, consumer: loop.consumer, minIdleMs: loop.reclaimIdleMs, count: free });
    if (entries.length > 0) {
      loop.tally.reclaimed(await loop.turns.dispatch(entries, true), entries.length);
      loop.logger.info({ count: entries.length, entryIds: entries.map((e) => e.id) }, "reclaimed stalled entries");
    }
  } catch (error) {
    if (!loop.health.absorb(error)) loop.logger.warn({ err: error }, "reclaim failed; retrying on the next interval");
  }
}
