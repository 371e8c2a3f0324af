/**
 * A harness's shutdown once its delivery loop has stopped: graceful first (dead-letter moves finish; turns in
 * flight get `shutdownGraceMs` to publish their outcome), then forced (the rest are abandoned: their signal aborted,
 * nothing published or acknowledged, so another worker reclaims their entries).
 */
import type { Logger } from "../logger.js";
import { sleep } from "../sleep.js";
import type { DeadLetters } from "./dead-letters.js";
import type { TurnSlots } from "./turn-slots.js";
import type { TurnTally } from "./turn-tally.js";

export interface Shutdown {
  slots: TurnSlots;
  deadLetters: DeadLetters;
  tally: TurnTally;
  shutdownGraceMs: number;
  logger: Logger;
}

/** Resolves with no turn left in a slot. */
export async function drain({ slots, deadLetters, tally, shutdownGraceMs, logger }: Shutdown): Promise<void> {
  await deadLetters.settled();
  if (slots.inFlight === 0) return;
  logger.info({ inFlight: slots.inFlight, shutdownGraceMs }, "stopping: waiting for in-flight turns");
  const graceController = new AbortController();
  const turns = [...slots.turns()];
  await Promise.race([Promise.all(turns.map((t) => t.done)), sleep(shutdownGraceMs, graceController.signal)]);
  // The grace timer must not keep the process up once every turn is done.
  graceController.abort();
  for (const turn of slots.turns()) {
    if (turn.abandon(`shutdown grace of ${shutdownGraceMs} ms exceeded`)) tally.count(turn.entryId, "abandoned");
  }
  slots.clear();
}
