/**
 * The live flags as a harness obeys them: BUS_ENABLED and HARNESS_ENABLED decide whether the delivery loop takes
 * new work (turns in flight always finish), BUS_ROUTED whether a turn may delegate. Without flags everything is on
 * and nothing is asked.
 */
import type { HarnessFlags } from "../flags/flag-types.js";
import type { Logger } from "../logger.js";
import { sleep } from "../sleep.js";

/** With live flags, blocking reads are cut short this often so a flag change applies well within 2 s. */
const FLAG_READ_BLOCK_CAP_MS = 500;
/** How often a paused harness looks at its flags again. */
const PAUSE_CHECK_MS = 200;

export class FlagsGate {
  /** True while the flags keep the harness from taking new work. */
  paused = false;
  /** How long a read may block: capped with flags, so the loop looks at them again soon enough. */
  readonly readBlockMs: number;
  /** BUS_ROUTED for the queue, as the turns ask it; undefined without flags (always routed). */
  readonly routed: (() => boolean) | undefined;

  constructor(
    private readonly flags: HarnessFlags | undefined,
    private readonly queueKind: "role" | "team",
    private readonly queue: string,
    blockMs: number,
    private readonly logger: Logger,
  ) {
    this.readBlockMs = flags ? Math.min(blockMs, FLAG_READ_BLOCK_CAP_MS) : blockMs;
    this.routed = flags ? () => flags.busRouted(queueKind, queue) : undefined;
  }

  accepting(): boolean {
    const flags = this.flags;
    return !flags || (flags.busEnabled() && flags.harnessEnabled(this.queueKind, this.queue));
  }

  /** Switched off: take nothing new (turns in flight run on and send their outcome) until switched on again. */
  async pauseWhileSwitchedOff(stop: AbortSignal, inFlight: number): Promise<void> {
    this.paused = true;
    this.logger.info({ inFlight }, "switched off (BUS_ENABLED or HARNESS_ENABLED): taking no new work; turns in flight finish");
    while (!stop.aborted && !this.accepting()) await sleep(PAUSE_CHECK_MS, stop);
    this.paused = false;
    if (!stop.aborted) this.logger.info("switched on: taking work again");
  }
}
