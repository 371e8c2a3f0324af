/**
 * The clock of one outbound call: a connect deadline (name resolution, TCP and TLS until the request can be written),
 * a total deadline (until the last response byte), and the callers' signals, folded into one AbortSignal whose
 * `reason` is already the SwitchyardError to throw.
 */
import { ErrorCode } from "../../errors.js";
import { EgressReason, egressError } from "./egress-errors.js";

export interface CallDeadline {
  /** Aborts when either deadline passes or any caller signal aborts; `reason` is a SwitchyardError. */
  readonly signal: AbortSignal;
  /** The connection is up: the connect deadline no longer applies. */
  connected(): void;
  /** Clears timers and listeners; call in `finally`. */
  dispose(): void;
}

export interface CallDeadlineOptions {
  connectTimeoutMs: number;
  totalTimeoutMs: number;
  /**
   * When the whole call must have ended (ms since epoch), read again each time the total deadline comes: a caller
   * may push it later while the call runs (an MCP tool reporting progress extends its step's due time). The call
   * then ends at the latest value seen, never before `totalTimeoutMs`. @defaultValue `totalTimeoutMs` is final
   */
  totalUntil?: () => number;
  /** Caller signals (the request's, the guard's lifetime); undefined entries are ignored. */
  signals: ReadonlyArray<AbortSignal | undefined>;
  /** Named in messages. */
  target: string;
}

export function startCallDeadline(options: CallDeadlineOptions): CallDeadline {
  const controller = new AbortController();
  const abort = (reason: unknown) => {
    if (!controller.signal.aborted) controller.abort(reason);
  };
  const connectTimer = setTimeout(
    () =>
      abort(
        egressError(ErrorCode.Timeout, `egress to ${options.target}: no connection within ${options.connectTimeoutMs}ms`, {
          reason: EgressReason.ConnectTimeout,
          transient: true,
          timeoutMs: options.connectTimeoutMs,
        }),
      ),
    options.connectTimeoutMs,
  );
  const startedAt = Date.now();
  let totalTimer: ReturnType<typeof setTimeout>;
  const armTotal = (ms: number): void => {
    totalTimer = setTimeout(() => {
      const left = options.totalUntil ? options.totalUntil() - Date.now() : 0;
      if (left > 0) return armTotal(left);
      const tookMs = options.totalUntil ? Date.now() - startedAt : options.totalTimeoutMs;
      abort(
        egressError(ErrorCode.Timeout, `egress to ${options.target}: no complete response within ${tookMs}ms`, {
          reason: EgressReason.TotalTimeout,
          transient: true,
          timeoutMs: tookMs,
        }),
      );
    }, ms);
  };
  armTotal(options.totalTimeoutMs);
  const listeners: Array<() => void> = [];
  for (const signal of options.signals) {
    if (signal === undefined) continue;
    const onAbort = () =>
      abort(
        egressError(
          ErrorCode.Cancelled,
          `egress to ${options.target} cancelled by the caller`,
          { reason: EgressReason.Cancelled, transient: false },
          signal.reason,
        ),
      );
    if (signal.aborted) {
      onAbort();
      continue;
    }
    signal.addEventListener("abort", onAbort, { once: true });
    listeners.push(() => signal.removeEventListener("abort", onAbort));
  }
  return {
    signal: controller.signal,
    connected: () => clearTimeout(connectTimer),
    dispose: () => {
      clearTimeout(connectTimer);
      clearTimeout(totalTimer);
      for (const remove of listeners) remove();
    },
  };
}

/** Settles with `promise`, or rejects with the signal's reason as soon as it aborts. */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
