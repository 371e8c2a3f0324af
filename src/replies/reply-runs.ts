/**
 * The sender's runs: claim a batch of due rows, dial them all, claim again until none is due. One run at a time
 * per sender; a run asked for while one is going makes that one go round again (new rows may have come after its
 * last claim) rather than starting a second.
 */
import type { Logger } from "../logger.js";
import type { DependencyHealth } from "../process/dependency-health.js";
import type { ClaimedReply } from "../store/replies/reply-store.js";

export class ReplyRuns {
  /** Set by the first run: only a process that runs the job is kicked (a short-lived CLI never dials). */
  private active = false;
  private closed = false;
  private running: Promise<number> | undefined;
  private again = false;

  constructor(
    private readonly claim: () => Promise<ClaimedReply[]>,
    private readonly dial: (reply: ClaimedReply) => Promise<void>,
    private readonly logger: Logger,
    private readonly health: DependencyHealth | undefined,
  ) {}

  /** Resolves with how many rows the run handled. */
  runOnce(): Promise<number> {
    if (this.closed) return Promise.resolve(0);
    this.active = true;
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.run();
    return this.running;
  }

  private async run(): Promise<number> {
    let total = 0;
    try {
      do {
        this.again = false;
        for (;;) {
          const claimed = await this.claim();
          if (claimed.length === 0) break;
          await Promise.all(claimed.map((reply) => this.dial(reply)));
          total += claimed.length;
          if (this.closed) break;
        }
      } while (this.again && !this.closed);
    } finally {
      this.running = undefined;
    }
    return total;
  }

  kick(): void {
    if (!this.active || this.closed) return;
    setTimeout(
      () =>
        void this.runOnce().catch((error: unknown) => {
          // An outage is the process's DependencyHealth's to log (once); the periodic job runs the rows again.
          if (this.health?.absorb(error)) return;
          this.logger.error({ err: error }, "reply sender run failed");
        }),
      0,
    );
  }

  /** Stops kicks and new runs, and waits for the run in flight. */
  async close(): Promise<void> {
    this.closed = true;
    await this.running?.catch(() => undefined);
  }
}
