/**
 * Whether a failed send can have reached the agent. Only a send that failed before any byte of a request was written
 * is reported `not-sent`, which lets the step's retries re-send it; anything else (a timeout, a reset, an answer)
 * may have reached the agent. Such a send is not re-tried within the send (sender.ts `isTransient`) nor re-sent by
 * the step's retries, unless the agent is registered idempotent — then both may repeat it.
 */
import { SwitchyardError } from "../errors.js";
import { EgressReason } from "./egress/index.js";

/** Egress refusals and connection failures that happen before a byte of the request is written. */
const NOT_SENT_REASONS: ReadonlySet<string> = new Set([
  EgressReason.UrlInvalid,
  EgressReason.SchemeNotAllowed,
  EgressReason.UrlCredentials,
  EgressReason.HostNotAllowed,
  EgressReason.AddressBlocked,
  EgressReason.DnsFailed,
  EgressReason.ConnectTimeout,
  EgressReason.BreakerOpen,
]);
const NOT_CONNECTED_CODES: ReadonlySet<string> = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "ENETDOWN", "ENOTFOUND", "EAI_AGAIN"]);

export function failedBeforeSending(error: unknown): boolean {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (!(e instanceof SwitchyardError)) continue;
    const reason = e.details.reason;
    if (typeof reason !== "string") continue;
    if (NOT_SENT_REASONS.has(reason)) return true;
    if (reason === EgressReason.ConnectionFailed) return NOT_CONNECTED_CODES.has(String(e.details.errorCode));
    // A client's own verdict (an answer, a timeout, a bad response) means the request went out; only a network
    // failure is looked into further.
    if ((reason.startsWith("A2A_") && reason !== "A2A_NETWORK") || (reason.startsWith("MCP_") && reason !== "MCP_NETWORK")) return false;
  }
  return false;
}

