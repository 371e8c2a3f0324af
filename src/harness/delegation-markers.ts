/**
 * The delegation markers of one turn: `ctx.delegate`, `ctx.delegateAll` and `ctx.awaitMore` build them here, and
 * the turn asks `markerOf` at the end whether what the handler returned stands the turn down.
 *
 * Two rules are sticky — they fail the turn even when the handler catches the throw and carries on — because a
 * handler that swallowed them would otherwise do something it was told it cannot:
 * - BUS_ROUTED off: a switched-off route is never bypassed (`delegate`, `delegateAll`; `awaitMore` asks nothing
 *   new, so it is not a route and stays allowed);
 * - one marker per turn: the coordinator takes one stand-down per turn, so a second marker would silently drop
 *   whatever the handler did not return.
 */
import { randomUUID } from "node:crypto";
import { parseDestination } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import {
  createDelegation,
  isDelegation,
  type DelegateAllOptions,
  type DelegateOptions,
  type Delegation,
  type SubQuery,
  type SubQueryRequest,
  type Work,
} from "./types.js";

/** Longest correlation id a handler may choose; the coordinator stores it and echoes it on the REPLY. */
export const MAX_CORRELATION_ID_CHARS = 200;

export interface DelegationMarkersDeps {
  /** The queue the turn runs on (`role:NAME`), named in the BUS_ROUTED refusal. */
  stream: string;
  /** BUS_ROUTED for this queue; false makes `delegate` and `delegateAll` fail the turn. @defaultValue always routed */
  routed?: () => boolean;
}

export interface DelegationMarkers {
  delegate(destination: string, payload: unknown, options?: DelegateOptions): Delegation;
  delegateAll(queries: readonly SubQueryRequest[], options?: DelegateAllOptions): Delegation;
  awaitMore(state?: unknown): Delegation;
  /**
   * After the handler returned `value`: throws the sticky failure if there is one, throws when `value` is a marker
   * this turn did not create, and otherwise returns the marker (or undefined: `value` is a final output).
   */
  markerOf(value: unknown): Delegation | undefined;
}

function invalid(message: string, details: Record<string, unknown> = {}): SwitchyardError {
  return new SwitchyardError(ErrorCode.InvalidArgument, message, { details });
}

export function createDelegationMarkers(work: Work, deps: DelegationMarkersDeps): DelegationMarkers {
  let created: Delegation | undefined;
  let createdBy = "";
  let stickyFailure: SwitchyardError | undefined;
  const outstanding = new Set(work.resume?.outstanding ?? []);

  function fail(error: SwitchyardError): never {
    stickyFailure ??= error;
    throw error;
  }

  /** Checks what every marker must satisfy before anything of it is built. */
  function assertFirstMarker(call: string): void {
    if (created) {
      fail(invalid(`ctx.${call}() called after ctx.${createdBy}() in the same turn; a turn returns one marker: collect the sub-queries into one ctx.delegateAll()`));
    }
  }

  function assertRouted(destinations: readonly string[]): void {
    if (!deps.routed || deps.routed()) return;
    fail(
      new SwitchyardError(
        ErrorCode.BusNotRouted,
        `delegation from ${deps.stream} to ${destinations.join(", ")} is not routed: BUS_ROUTED is off for ${deps.stream} (switchyard flags set BUS_ROUTED on --${deps.stream.replace(":", " ")})`,
        { details: { source: deps.stream, destinations } },
      ),
    );
  }

  /** Parses one sub-query; `where` names it in messages ("" for `delegate`, "queries[2]." for `delegateAll`). */
  function subQuery(to: unknown, payload: unknown, correlationId: unknown, where: string, seen: Set<string>): SubQuery {
    const destination = typeof to === "string" ? parseDestination(to) : undefined;
    if (!destination) throw invalid(`delegation ${where}destination ${JSON.stringify(to)} is not role:NAME, team:NAME or foreign:KEY`, { destination: to });
    let id: string;
    if (correlationId === undefined) {
      id = randomUUID();
    } else {
      if (typeof correlationId !== "string" || correlationId === "" || correlationId.length > MAX_CORRELATION_ID_CHARS) {
        throw invalid(`delegation ${where}correlationId must be a string of 1 to ${MAX_CORRELATION_ID_CHARS} characters`);
      }
      id = correlationId;
    }
    if (outstanding.has(id)) {
      throw invalid(`delegation ${where}correlationId ${JSON.stringify(id)} is still awaited from an earlier turn; each outstanding sub-query needs its own id`, { correlationId: id });
    }
    if (seen.has(id)) throw invalid(`delegation ${where}correlationId ${JSON.stringify(id)} is repeated in this call`, { correlationId: id });
    seen.add(id);
    return { destination, payload: payload ?? null, correlationId: id };
  }

  function issue(call: string, queries: SubQuery[], state: unknown): Delegation {
    const marker = createDelegation({ queries, state: state ?? null });
    created = marker;
    createdBy = call;
    return marker;
  }

  return {
    delegate(destination, payload, options = {}) {
      assertFirstMarker("delegate");
      const query = subQuery(destination, payload, options.correlationId, "", new Set());
      assertRouted([destination]);
      return issue("delegate", [query], options.state);
    },

    delegateAll(requests, options = {}) {
      assertFirstMarker("delegateAll");
      if (!Array.isArray(requests)) throw invalid("ctx.delegateAll() takes a list of sub-queries [{ to, payload, correlationId? }, …]");
      if (requests.length === 0) {
        throw invalid("ctx.delegateAll() needs at least one sub-query; to keep waiting without asking more, return ctx.awaitMore(state)");
      }
      const seen = new Set<string>();
      const queries = requests.map((request: SubQueryRequest | null | undefined, index) => {
        if (typeof request !== "object" || request === null) throw invalid(`delegation queries[${index}] must be an object { to, payload, correlationId? }`);
        return subQuery(request.to, request.payload, request.correlationId, `queries[${index}].`, seen);
      });
      assertRouted(requests.map((r) => r.to));
      return issue("delegateAll", queries, options.state);
    },

    awaitMore(state) {
      assertFirstMarker("awaitMore");
      if (outstanding.size === 0) {
        throw invalid(
          work.resume
            ? "ctx.awaitMore(): no reply is outstanding (this was the last one); return the step's output instead"
            : "ctx.awaitMore(): nothing was delegated yet, so there is no reply to wait for",
        );
      }
      return issue("awaitMore", [], state);
    },

    markerOf(value) {
      if (stickyFailure) throw stickyFailure;
      if (!isDelegation(value)) return undefined;
      if (value !== created) throw invalid("the handler returned a Delegation this turn's ctx.delegate(), ctx.delegateAll() or ctx.awaitMore() did not create");
      return value;
    },
  };
}
