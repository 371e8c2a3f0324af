/**
 * One circuit breaker (opossum) per (tenant, foreign agent). When an agent keeps failing, its breaker opens and calls
 * fail fast with `BREAKER_OPEN` instead of piling onto it; after `resetTimeout` one trial call is let through
 * (half-open) and its outcome closes or re-opens the breaker. Tenants never share a breaker, so one tenant's
 * failing agent cannot cut off another's.
 *
 * Use it inside the retry loop, `withRetries(() => breakers.run(tenant, agent, call))`: each attempt is counted, and
 * an open breaker ends the retries at once (its error is not transient).
 */
import CircuitBreaker from "opossum";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { EgressReason, egressError } from "./egress-errors.js";

export type BreakerState = "closed" | "open" | "half_open";

export interface BreakerRegistryOptions {
  /** Failure percentage over the rolling window that opens the breaker. @defaultValue 50 */
  errorThresholdPercentage?: number;
  /** Calls in the rolling window before the breaker may open at all. @defaultValue 5 */
  volumeThreshold?: number;
  /** How long an open breaker waits before letting a trial call through (ms). @defaultValue 30000 */
  resetTimeout?: number;
  /** Length of the rolling statistics window (ms). @defaultValue 10000 */
  rollingCountTimeout?: number;
  /** Told on every transition, for metrics and logs. Exceptions it throws are swallowed. */
  onStateChange?: (tenant: string, agent: string, state: BreakerState) => void;
  /**
   * Whether an error counts against the agent. @defaultValue everything except our own refusals and cancellations
   * (SwitchyardError codes POLICY_DENIED, CANCELLED, INVALID_ARGUMENT), which say nothing about the agent's health.
   */
  isFailure?: (error: unknown) => boolean;
}

export interface BreakerSnapshot {
  tenant: string;
  agent: string;
  state: BreakerState;
}

type Call = () => Promise<unknown>;

interface Entry {
  tenant: string;
  agent: string;
  breaker: CircuitBreaker<[Call], unknown>;
}

const NOT_AGENT_FAULTS: ReadonlySet<string> = new Set([ErrorCode.PolicyDenied, ErrorCode.Cancelled, ErrorCode.InvalidArgument]);

export function defaultIsBreakerFailure(error: unknown): boolean {
  return !(error instanceof SwitchyardError && NOT_AGENT_FAULTS.has(error.code));
}

export class BreakerRegistry {
  readonly #options: BreakerRegistryOptions;
  readonly #entries = new Map<string, Entry>();
  #closed = false;

  constructor(options: BreakerRegistryOptions = {}) {
    this.#options = options;
  }

  /** Runs `fn` through the (tenant, agent) breaker; an open breaker rejects at once with Unavailable/BREAKER_OPEN. */
  async run<T>(tenant: string, agent: string, fn: () => Promise<T>): Promise<T> {
    const entry = this.#entry(tenant, agent);
    try {
      return (await entry.breaker.fire(fn)) as T;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException | undefined)?.code;
      if (code === "EOPENBREAKER") {
        throw egressError(
          ErrorCode.Unavailable,
          `foreign agent ${agent} (tenant ${tenant}) is failing: its circuit breaker is open, so the call was not made`,
          { reason: EgressReason.BreakerOpen, transient: false, tenant, agent, state: this.state(tenant, agent) },
          error,
        );
      }
      if (code === "ESHUTDOWN") {
        throw new SwitchyardError(ErrorCode.Unavailable, "breaker registry is shut down", { cause: error, details: { transient: false } });
      }
      throw error;
    }
  }

  /** `closed` for a pair that has no breaker yet. */
  state(tenant: string, agent: string): BreakerState {
    const entry = this.#entries.get(keyOf(tenant, agent));
    return entry === undefined ? "closed" : stateOf(entry.breaker);
  }

  /** Every breaker made so far, for metrics collection. */
  states(): BreakerSnapshot[] {
    return [...this.#entries.values()].map((e) => ({ tenant: e.tenant, agent: e.agent, state: stateOf(e.breaker) }));
  }

  /** Drops a pair's breaker (an agent disabled or re-registered); the next call starts closed. */
  forget(tenant: string, agent: string): void {
    const key = keyOf(tenant, agent);
    this.#entries.get(key)?.breaker.shutdown();
    this.#entries.delete(key);
  }

  /** Stops every breaker's timers; later calls fail with Unavailable. Idempotent. */
  shutdown(): void {
    this.#closed = true;
    for (const entry of this.#entries.values()) entry.breaker.shutdown();
    this.#entries.clear();
  }

  #entry(tenant: string, agent: string): Entry {
    if (this.#closed) throw new SwitchyardError(ErrorCode.Unavailable, "breaker registry is shut down", { details: { transient: false } });
    const key = keyOf(tenant, agent);
    const existing = this.#entries.get(key);
    if (existing !== undefined) return existing;
    const isFailure = this.#options.isFailure ?? defaultIsBreakerFailure;
    const breaker = new CircuitBreaker<[Call], unknown>((call: Call) => call(), {
      name: `${tenant}/${agent}`,
      // Our fetch has its own connect and total deadlines; a second timer here would race them.
      timeout: false,
      errorThresholdPercentage: this.#options.errorThresholdPercentage ?? 50,
      volumeThreshold: this.#options.volumeThreshold ?? 5,
      resetTimeout: this.#options.resetTimeout ?? 30_000,
      rollingCountTimeout: this.#options.rollingCountTimeout ?? 10_000,
      errorFilter: (error: unknown) => !isFailure(error),
      enableSnapshots: false,
      rollingPercentilesEnabled: false,
    });
    const notify = (state: BreakerState) => {
      try {
        this.#options.onStateChange?.(tenant, agent, state);
      } catch {
        // A metrics hook must not break the call path.
      }
    };
    breaker.on("open", () => notify("open"));
    breaker.on("halfOpen", () => notify("half_open"));
    breaker.on("close", () => notify("closed"));
    const entry = { tenant, agent, breaker };
    this.#entries.set(key, entry);
    return entry;
  }
}

function keyOf(tenant: string, agent: string): string {
  return `${tenant}\u0000${agent}`;
}

function stateOf(breaker: CircuitBreaker<[Call], unknown>): BreakerState {
  if (breaker.halfOpen) return "half_open";
  return breaker.opened ? "open" : "closed";
}
