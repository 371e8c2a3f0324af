/**
 * The sender's scheduling, apart from what a send is: claims into free slots (send-slots.ts), starts each send
 * without waiting for it, claims again as each one ends, and aborts calls whose step attempt is over (checked every
 * `livenessIntervalMs` while anything is in flight). One claim at a time per process; `run()` is the step-by-step
 * form (claim, wait for everything, repeat) that tests and one-shot drivers use.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Logger } from "../logger.js";
import type { ClaimRooms, InFlightCall, SendSlots } from "./send-slots.js";

/** Why a call was aborted from here: the abort reason of the call's signal. */
export type CallStopReason = "ATTEMPT_OVER" | "CALL_CEILING" | "SHUTDOWN";
export type CallStop = SwitchyardError & { details: { reason: CallStopReason } };

export function callStop(reason: CallStopReason, message: string): CallStop {
  return new SwitchyardError(ErrorCode.Unavailable, message, { details: { reason, retryable: false } }) as CallStop;
}

/** The abort reason of a call stopped from here, or undefined (not aborted, or aborted by someone else). */
export function stopOf(call: InFlightCall): CallStop | undefined {
  const reason: unknown = call.controller.signal.reason;
  return call.controller.signal.aborted && reason instanceof SwitchyardError && typeof reason.details.reason === "string" ? (reason as CallStop) : undefined;
}

const ATTEMPT_OVER_MESSAGE = "the step attempt is no longer in flight (cancelled, timed out or retried); the call was aborted";

export interface SendPoolOptions<C extends { bridge: { id: string; orgId: string } }> {
  slots: SendSlots;
  /** Claims within the rooms; an empty list when nothing is claimable. */
  claim(rooms: ClaimRooms): Promise<C[]>;
  /** Sends one; false when it was handed back unsent (switched off meanwhile). */
  send(claimed: C, call: InFlightCall): Promise<boolean>;
  /** Of the bridges in flight, those whose step attempt is over. */
  attemptsOver(bridgeIds: readonly string[]): Promise<string[]>;
  /** False while nothing may be claimed (BUS_ENABLED off). */
  enabled(): boolean;
  /** An error from a background claim or record: true when the process's outage tracking took it. */
  absorb(error: unknown): boolean;
  logger: Logger;
  livenessIntervalMs: number;
}

export class SendPool<C extends { bridge: { id: string; orgId: string } }> {
  private closed = false;
  private filling: Promise<number> | undefined;
  private fillAgain = false;
  private handled = 0;
  private settledWaiters: Array<() => void> = [];
  private liveness: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(private readonly options: SendPoolOptions<C>) {}

  get inFlight(): number {
    return this.options.slots.size;
  }

  /** Claims into the free slots and starts those sends, never waiting for one; answers how many started. */
  fill(): Promise<number> {
    if (this.closed || !this.options.enabled()) return Promise.resolve(0);
    if (this.filling) {
      this.fillAgain = true;
      return this.filling;
    }
    this.filling = (async () => {
      let started = 0;
      try {
        do {
          this.fillAgain = false;
          while (!this.closed) {
            const claimed = await this.options.claim(this.options.slots.rooms());
            if (claimed.length === 0) break;
            for (const c of claimed) this.start(c);
            started += claimed.length;
          }
        } while (this.fillAgain && !this.closed);
      } finally {
        this.filling = undefined;
        this.notifySettled();
      }
      return started;
    })();
    return this.filling;
  }

  /** `fill()` in the background, its failure logged (or absorbed as an outage). */
  fillSoon(): void {
    void this.fill().catch((error: unknown) => {
      if (!this.options.absorb(error)) this.options.logger.error({ err: error }, "foreign sender failed");
    });
  }

  /** Fills, waits until nothing is in flight, and repeats while that handled anything; answers how many were handled. */
  async run(): Promise<number> {
    const before = this.handled;
    for (;;) {
      const round = this.handled;
      const started = await this.fill();
      await this.settled();
      if (started === 0 || this.handled === round) break;
    }
    return this.handled - before;
  }

  /** Aborts a call in flight whose step attempt is over (no-op when it is not in flight). */
  attemptOver(bridgeId: string): void {
    this.options.slots.get(bridgeId)?.controller.abort(callStop("ATTEMPT_OVER", ATTEMPT_OVER_MESSAGE));
  }

  /** Stops claiming; waits up to `graceMs` for the calls in flight, then aborts the rest as SHUTDOWN. */
  async close(graceMs: number): Promise<void> {
    this.closed = true;
    await Promise.race([this.settled(), delay(graceMs)]);
    this.options.slots.abortAll(callStop("SHUTDOWN", "the coordinator is shutting down"));
    await Promise.race([this.settled(), delay(1_000)]);
    this.stopLiveness();
  }

  private start(claimed: C): void {
    const call = this.options.slots.add(claimed.bridge.id, claimed.bridge.orgId);
    this.startLiveness();
    void this.options
      .send(claimed, call)
      .catch((error: unknown) => {
        // Recording the outcome failed (an outage): the bridge stays claimed and is retried after its lease.
        if (!this.options.absorb(error)) this.options.logger.error({ err: error, bridgeId: claimed.bridge.id }, "foreign send could not be recorded");
        return false;
      })
      .then((handled) => {
        this.options.slots.remove(call);
        if (handled) {
          this.handled++;
          // A slot freed: claim into it now (not after a hand-back, which would only find itself again).
          if (!this.closed) this.fillSoon();
        }
        if (this.options.slots.size === 0) this.stopLiveness();
        this.notifySettled();
      });
  }

  private settled(): Promise<void> {
    if (this.options.slots.size === 0 && !this.filling) return Promise.resolve();
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }

  private notifySettled(): void {
    if (this.options.slots.size !== 0 || this.filling) return;
    const waiters = this.settledWaiters;
    this.settledWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private startLiveness(): void {
    if (this.liveness) return;
    this.liveness = setInterval(() => void this.checkLiveness(), this.options.livenessIntervalMs);
    this.liveness.unref();
  }

  private stopLiveness(): void {
    if (this.liveness) clearInterval(this.liveness);
    this.liveness = undefined;
  }

  private async checkLiveness(): Promise<void> {
    if (this.checking || this.options.slots.size === 0) return;
    this.checking = true;
    try {
      for (const id of await this.options.attemptsOver(this.options.slots.bridgeIds())) this.attemptOver(id);
    } catch (error) {
      if (!this.options.absorb(error)) this.options.logger.warn({ err: error }, "could not check the foreign calls in flight");
    } finally {
      this.checking = false;
    }
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
