/**
 * One turn's state: what its parts (the run in turn.ts, the handler's context, the skips, the outcome) share, and
 * what the harness holds of it (`RunningTurn`). A class rather than a closure so that a turn costs one object, with
 * its methods on the prototype, at thousands of turns per second.
 */
import type { Span } from "@opentelemetry/api";
import type { BusEntry } from "../bus/bus.js";
import type { Envelope } from "../bus/codec.js";
import { answerInbox } from "../bus/shards.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Logger } from "../logger.js";
import { stampTrace } from "../telemetry/turn-spans.js";
import { tracingOn } from "../telemetry/tracing.js";
import type { Delivery, RunningTurn, TurnDeps, TurnOutcome } from "./turn.js";

export class TurnState implements RunningTurn {
  readonly entryId: string;
  readonly envelope: Envelope;
  readonly logger: Logger;
  /** The handler's signal: aborted when the turn is abandoned. */
  readonly controller: AbortController;
  /** Tracing on only (src/telemetry/turn-spans.ts): the turn's span, and the trace its envelopes carry. */
  readonly traced: boolean;
  span: Span | undefined = undefined;
  abandoned = false;
  /** The turn has published and acknowledged, or given up: a late heartbeat sends nothing. */
  settled = false;
  touchTimer: NodeJS.Timeout | undefined = undefined;
  /** Set by startTurn right after construction. */
  done!: Promise<TurnOutcome>;

  constructor(
    readonly entry: BusEntry,
    readonly deps: TurnDeps,
    readonly delivery: Delivery,
  ) {
    this.entryId = entry.id;
    const envelope = entry.envelope;
    this.envelope = envelope;
    this.logger = deps.logger.child({
      orgId: envelope.orgId,
      taskId: envelope.taskId,
      stepId: envelope.stepId,
      envelopeId: envelope.id,
      attempt: envelope.attempt,
      entryId: entry.id,
    });
    this.controller = new AbortController();
    this.traced = tracingOn();
  }

  /** Keeps the entry from going idle, so no reclaim takes it while the handler runs. */
  touch(): Promise<void> {
    const deps = this.deps;
    return deps.bus.touch(deps.stream, deps.group, deps.consumer, [this.entryId]);
  }

  /** Touches every `heartbeatMs` until `stopTouching`; a failed touch is logged, the entry may then be reclaimed. */
  startTouching(): void {
    const timer = setInterval(() => {
      this.touch().catch((error: unknown) => {
        if (!this.deps.health?.absorb(error)) this.logger.warn({ err: error }, "could not touch the entry; it may be reclaimed");
      });
    }, this.deps.heartbeatMs);
    timer.unref?.();
    this.touchTimer = timer;
  }

  stopTouching(): void {
    clearInterval(this.touchTimer);
  }

  /** Publishes to the coordinator's inbox for the incoming envelope, with no acknowledgement (heartbeat, reply request). */
  async publish(outgoing: Envelope): Promise<void> {
    // Signing encodes and validates (MALFORMED_ENVELOPE / PAYLOAD_TOO_LARGE), as publishing did.
    await this.deps.bus.publishEncoded([{ stream: answerInbox(this.envelope), data: this.deps.signer.sign(stampTrace(this.span, outgoing)) }]);
  }

  abandon(reason: string): boolean {
    if (this.settled || this.abandoned) return false;
    this.abandoned = true;
    this.stopTouching();
    this.logger.warn({ reason }, "abandoning the turn; its entry stays pending and will be reclaimed");
    this.controller.abort(new SwitchyardError(ErrorCode.Cancelled, reason));
    return true;
  }
}
