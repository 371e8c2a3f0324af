/** FOREIGN agents (A2A and MCP): the egress guard, the sender and sweep (coordinators) and the callback (gateways). */
import { cidrList, integer } from "./fields.js";
import { setting, type Variable, type VariableDoc } from "./variable.js";

const egress = (doc: string): VariableDoc => ({ group: "foreign", readBy: ["coordinator"], doc });
const callback = (doc: string): VariableDoc => ({ group: "foreign", readBy: ["gateway"], doc });

export const foreignVariables: readonly Variable[] = [
  setting("SWITCHYARD_EGRESS_ALLOWED_NETWORKS", "foreign.allowedNetworks", cidrList, {
    ...egress("operator CIDRs an agent may resolve to despite being private, loopback or otherwise special-purpose (e.g. `127.0.0.0/8` in development)"),
    defaultText: "(none)",
  }),
  setting("SWITCHYARD_EGRESS_CONNECT_TIMEOUT_MS", "foreign.connectTimeoutMs", integer(1), egress("per outbound call: resolve + connect + TLS (ms)")),
  setting("SWITCHYARD_EGRESS_TOTAL_TIMEOUT_MS", "foreign.totalTimeoutMs", integer(1), egress("per outbound call: the whole call (ms); an MCP call's quiet timeout")),
  setting("SWITCHYARD_EGRESS_MAX_RESPONSE_BYTES", "foreign.maxResponseBytes", integer(1), egress("largest response read from an agent (bytes)")),
  setting(
    "SWITCHYARD_FOREIGN_SEND_CONCURRENCY",
    "foreign.sendConcurrency",
    integer(1, 10_000),
    egress("foreign calls (A2A `SendMessage`, MCP `tools/call`) in flight at once per coordinator process; slots are claimed as they free"),
  ),
  setting(
    "SWITCHYARD_FOREIGN_TENANT_SEND_PERCENT",
    "foreign.tenantSendPercent",
    integer(1, 100),
    egress("the share (percent) of those slots one tenant may hold at once, times its dispatch weight (`limits set --weight`); at least one"),
  ),
  setting(
    "SWITCHYARD_FOREIGN_CALL_CEILING_FACTOR",
    "foreign.callCeilingFactor",
    integer(1, 1_000),
    egress("a foreign call is aborted this many step timeouts after it started, whatever progress it reports"),
  ),
  setting("SWITCHYARD_EGRESS_RETRIES", "foreign.retries", integer(1), egress("attempts per call on transient failures")),
  setting("SWITCHYARD_EGRESS_RETRY_BASE_MS", "foreign.retryBaseMs", integer(0), egress("retry backoff base (ms)")),
  setting("SWITCHYARD_BREAKER_ERROR_PERCENT", "foreign.breakerErrorPercent", integer(1), egress("circuit breaker per (tenant, agent), per coordinator: error percentage that opens it")),
  setting("SWITCHYARD_BREAKER_VOLUME", "foreign.breakerVolume", integer(1), egress("circuit breaker: calls in its window before it may open")),
  setting("SWITCHYARD_BREAKER_RESET_MS", "foreign.breakerResetMs", integer(1), egress("circuit breaker: how long (ms) it stays open before a trial call")),
  setting("SWITCHYARD_A2A_CARD_TTL_MS", "foreign.cardTtlMs", integer(0), egress("Agent Card cache lifetime (ms)")),
  setting("SWITCHYARD_A2A_CALLBACK_GRACE_MS", "foreign.callbackTokenGraceMs", integer(0), {
    ...callback("callback tokens stay valid this long (ms) past the step deadline"),
    readBy: ["coordinator", "gateway"],
  }),
  setting("SWITCHYARD_A2A_CALLBACK_MAX_BYTES", "foreign.callbackMaxBytes", integer(1), callback("push notification body cap (bytes)")),
  setting("SWITCHYARD_A2A_CALLBACK_RATE", "foreign.callbackRatePerSec", integer(1), callback("push notifications accepted per tenant per second, per gateway process")),
  setting("SWITCHYARD_A2A_SWEEP_AFTER_MS", "foreign.sweepAfterMs", integer(0), egress("a pushed bridge quiet this long (ms) is polled with `GetTask`")),
  setting("SWITCHYARD_A2A_SWEEP_INTERVAL_MS", "foreign.sweepIntervalMs", integer(10), egress("how often (ms) the reconciliation sweep runs")),
  setting(
    "SWITCHYARD_FOREIGN_POLL_BASE_MS",
    "foreign.pollBaseMs",
    integer(10),
    egress("polled bridges: first `GetTask` after this long (ms), then doubling ([push or poll](#push-or-poll-and-when-a-foreign-task-is-done))"),
  ),
  setting("SWITCHYARD_FOREIGN_POLL_MAX_MS", "foreign.pollMaxMs", integer(10), egress("polled bridges: longest wait between two polls (ms)")),
];

/**
 * Variables named by a pattern, read as a family (load.ts): documented in the tables, not in the schema object.
 * `SWITCHYARD_SECRET_ENCRYPTION_KEY` shares the prefix but is the vault's key ring, no tenant's credential.
 */
export const patternVariables = [
  {
    name: "SWITCHYARD_SECRET_<TENANT>__<NAME>",
    prefix: "SWITCHYARD_SECRET_",
    group: "foreign",
    readBy: ["coordinator"],
    accepts: "text",
    defaultText: "(none)",
    doc:
      "the credential `env:NAME` of tenant TENANT resolves to (a secret, never logged); TENANT escaped (upper-cased, `-` → `_D`, `_` → `_U`), " +
      "NAME as registered",
  },
] as const;
