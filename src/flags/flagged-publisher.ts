/**
 * The outbox publisher under BUS_ENABLED: with the bus switched off nothing is published or relayed, the rows
 * stay in Postgres (committed with their decisions), and the relay sweep publishes them once it is on again.
 * The runtime hands this one to everything that publishes (coordinator, task service, approvals).
 */
import type { OutboxRow } from "../store/engine/engine-store.js";
import { OutboxPublisher, type OutboxPublisherOptions } from "../coordinator/outbox-publisher.js";
import type { FlagSwitches } from "./flag-types.js";

export class FlaggedOutboxPublisher extends OutboxPublisher {
  constructor(
    options: OutboxPublisherOptions,
    private readonly flags: Pick<FlagSwitches, "busEnabled">,
  ) {
    super(options);
  }

  override async publish(rows: readonly OutboxRow[]): Promise<void> {
    if (!this.flags.busEnabled()) return;
    await super.publish(rows);
  }

  override async sweep(): Promise<number> {
    if (!this.flags.busEnabled()) return 0;
    return super.sweep();
  }
}
