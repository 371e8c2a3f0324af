/**
 * From entries to running turns: what a read or a reclaim returned is sorted (not ours to handle → dead letter;
 * a second copy of an envelope or a superseded turn → acknowledged unrun by its turn) and each handled entry gets
 * a turn in a slot, counted when it ends.
 */
import type { BusEntry } from "../bus/bus.js";
import type { DeadLetters } from "./dead-letters.js";
import { screenEntries, type DuplicateDeps } from "./duplicates.js";
import { isHandledKind } from "./envelopes.js";
import { startTurn, type TurnDeps } from "./turn.js";
import type { TurnSlots } from "./turn-slots.js";
import type { TurnTally } from "./turn-tally.js";

export class TurnDispatch {
  constructor(
    /** What every turn of the harness shares; each turn adds its own observer. */
    private readonly turnDeps: Omit<TurnDeps, "observer">,
    private readonly screening: DuplicateDeps,
    private readonly slots: TurnSlots,
    private readonly tally: TurnTally,
    private readonly deadLetters: DeadLetters,
  ) {}

  /** Starts turns for the entries (`redelivered`: they come from a reclaim); returns how many were new to this harness. */
  async dispatch(entries: readonly BusEntry[], redelivered: boolean): Promise<number> {
    const slots = this.slots;
    const fresh = entries.filter((entry) => !slots.holds(entry.id));
    const handled: BusEntry[] = [];
    for (const entry of fresh) {
      if (isHandledKind(entry.envelope.kind)) handled.push(entry);
      else this.deadLetters.move(entry);
    }
    const { duplicates, superseded } = await screenEntries(handled, redelivered, this.screening);
    for (const entry of handled) {
      const duplicateOf = duplicates.get(entry.id);
      const observer = this.tally.started(entry, redelivered);
      const turn = startTurn(entry, { ...this.turnDeps, observer }, { redelivered, superseded: superseded.has(entry.id), ...(duplicateOf !== undefined ? { duplicateOf } : {}) });
      slots.take(entry.id, turn);
      void turn.done.then((outcome) => {
        slots.release(entry.id);
        if (outcome !== "abandoned") this.tally.count(entry.id, outcome);
        slots.wake();
      });
    }
    return fresh.length;
  }
}
