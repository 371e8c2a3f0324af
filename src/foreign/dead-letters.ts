/**
 * Foreign hops the coordinator gave up on without re-sending (a hop to an agent not registered `idempotent` that
 * timed out, or whose task the agent failed, while the step had retries left: step error FOREIGN_NOT_RETRIED, decided
 * in src/core/decide.ts), shown to SREs beside the bus's dead letters (`switchyard dlq list`,
 * AdminService/ListDeadLetters) under the stream name `foreign:KEY`.
 *
 * They live in Postgres, not in a Redis dead-letter stream: the record is the failed step and its bridge, written in
 * the same transaction as the decision, so it cannot be lost between commit and a Redis write. They cannot be
 * replayed — a re-send would open a new task at the agent, which is exactly what was refused; start a new task (or
 * register the agent `idempotent`) instead.
 */
import type { DeadLetterView } from "../bus/dead-letters.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Queryable } from "../store/db.js";
import type { BridgeStore } from "../store/bridges/bridge-store.js";

export const FOREIGN_NOT_RETRIED = "FOREIGN_NOT_RETRIED";

export function isForeignStream(stream: string): boolean {
  return stream.startsWith("foreign:");
}

/** Oldest first; `stream` (`foreign:KEY`) narrows to one agent key (of any tenant). */
export async function listForeignDeadLetters(bridges: Pick<BridgeStore, "listNotRetried">, db: Queryable, options: { stream?: string; limit: number }): Promise<DeadLetterView[]> {
  const agentKey = options.stream !== undefined && isForeignStream(options.stream) ? options.stream.slice("foreign:".length) : null;
  return bridges.listNotRetried(db, { agentKey, limit: options.limit });
}

/** Replay is refused for foreign streams: see the module comment. */
export function refuseForeignReplay(stream: string): void {
  if (!isForeignStream(stream)) return;
  throw new SwitchyardError(
    ErrorCode.FailedPrecondition,
    `${stream}: a foreign hop is never replayed (a re-send opens a new task at the agent and can repeat its effects); start a new task, or register the agent idempotent so its steps' retries re-send`,
    { details: { path: "stream", reason: "FOREIGN_NOT_REPLAYABLE" } },
  );
}
