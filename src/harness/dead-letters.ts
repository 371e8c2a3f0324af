/**
 * Entries a harness does not handle (anything but WORK and REPLY) are moved to the dead-letter stream rather than
 * left pending forever. The moves are quick and hold no slot, but a stop still waits for them before the bus is
 * closed.
 */
import type { Bus, BusEntry } from "../bus/bus.js";
import { EnvelopeKind } from "../bus/codec.js";
import { envelopeToBinary } from "../bus/envelope-wire.js";
import type { Logger } from "../logger.js";
import type { TurnTally } from "./turn-tally.js";

export class DeadLetters {
  private readonly moving = new Set<Promise<void>>();

  constructor(
    private readonly bus: Bus,
    private readonly stream: string,
    private readonly group: string,
    private readonly tally: TurnTally,
    private readonly logger: Logger,
  ) {}

  /** Starts moving `entry`; it is not waited for here (see `settled`). */
  move(entry: BusEntry): void {
    const moving = this.deadLetter(entry);
    this.moving.add(moving);
    void moving.finally(() => this.moving.delete(moving));
  }

  /** Resolves once the moves started so far are done. */
  settled(): Promise<unknown> {
    return Promise.all(this.moving);
  }

  private async deadLetter(entry: BusEntry): Promise<void> {
    const kindName = EnvelopeKind[entry.envelope.kind] ?? String(entry.envelope.kind);
    const reason = `the harness on ${this.stream} does not handle ${kindName} envelopes (only WORK and REPLY)`;
    let raw: Uint8Array;
    try {
      raw = envelopeToBinary(entry.envelope);
    } catch {
      raw = new Uint8Array();
    }
    try {
      await this.bus.deadLetter(this.stream, this.group, entry.id, raw, reason);
      this.tally.deadLettered();
      this.logger.warn({ entryId: entry.id, envelopeId: entry.envelope.id, orgId: entry.envelope.orgId, kind: kindName }, "dead-lettered an entry");
    } catch (error) {
      this.logger.error({ err: error, entryId: entry.id }, "could not dead-letter an entry; it stays pending");
    }
  }
}
