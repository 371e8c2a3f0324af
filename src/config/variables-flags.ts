/** The live flags' defaults, bus authentication and origin replies. */
import { parseBusSecrets, parsePublisherKey } from "../bus/auth/bus-keys.js";
import { ENCRYPTION_KEY_VARIABLE, parseEncryptionKeys } from "../vault/secret-cipher.js";
import { boolean, integer, list, nonNegativeNumber, parsed, scopeList } from "./fields.js";
import { setting, type Variable } from "./variable.js";

const TENANT_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const QUEUE_RE = /^(role|team):[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const tenants = scopeList(TENANT_RE, "acme,globex");

export const flagVariables: readonly Variable[] = [
  setting("SWITCHYARD_BUS_ENABLED", "flags.busEnabled", boolean, {
    group: "flags",
    readBy: ["all"],
    doc: "default of `BUS_ENABLED` ([Flags](#flags)): coordinators and harnesses read and publish on the bus",
  }),
  setting("SWITCHYARD_COORDINATOR_ENABLED", "flags.coordinatorEnabled", boolean, { group: "flags", readBy: ["all"], doc: "default of the global `COORDINATOR_ENABLED`" }),
  setting("SWITCHYARD_COORDINATOR_TENANTS", "flags.coordinatorTenants", tenants, {
    group: "flags",
    readBy: ["all"],
    defaultText: "(none)",
    doc: "tenants whose `COORDINATOR_ENABLED` defaults on",
  }),
  setting("SWITCHYARD_HARNESS_ENABLED", "flags.harnessEnabled", boolean, { group: "flags", readBy: ["all"], doc: "default of the global `HARNESS_ENABLED`" }),
  setting("SWITCHYARD_HARNESS_SCOPES", "flags.harnessScopes", scopeList(QUEUE_RE, "role:writer,team:ops"), {
    group: "flags",
    readBy: ["all"],
    defaultText: "(none)",
    doc: "queues whose `HARNESS_ENABLED` defaults on (their harnesses take work)",
  }),
  setting("SWITCHYARD_BUS_ROUTED", "flags.busRouted", scopeList(QUEUE_RE, "role:researcher,team:ops"), {
    group: "flags",
    readBy: ["all"],
    defaultText: "(none)",
    doc: "queues whose `BUS_ROUTED` defaults on (their handlers may delegate over the bus)",
  }),
  setting("SWITCHYARD_A2A_EGRESS_ENABLED", "flags.egressEnabled", boolean, { group: "flags", readBy: ["all"], doc: "default of the global `A2A_EGRESS_ENABLED`" }),
  setting("SWITCHYARD_A2A_EGRESS_TENANTS", "flags.egressTenants", tenants, {
    group: "flags",
    readBy: ["all"],
    defaultText: "(none)",
    doc: "tenants whose `A2A_EGRESS_ENABLED` defaults on (their foreign hops may leave the perimeter)",
  }),
  setting("SWITCHYARD_REPLY_ENABLED", "flags.replyEnabled", boolean, { group: "flags", readBy: ["all"], doc: "default of the global `REPLY_ENABLED`" }),
  setting("SWITCHYARD_REPLY_TENANTS", "flags.replyTenants", tenants, {
    group: "flags",
    readBy: ["all"],
    defaultText: "(none)",
    doc: "tenants whose `REPLY_ENABLED` defaults on (their workers and API callers may post origin replies)",
  }),
  setting("SWITCHYARD_FLAGS_POLL_MS", "flags.pollMs", integer(50), { group: "flags", readBy: ["all"], doc: "how often (ms) running processes re-read table `flags`" }),
  setting("SWITCHYARD_BUS_SECRET", "busAuth.secrets", parsed(parseBusSecrets, "`KID:SECRET[,KID:SECRET…]`", ["short:tooshort", "no-colon"]), {
    group: "busAuth",
    readBy: ["coordinator"],
    secret: true,
    defaultText: "(none; required by `start coordinator`)",
    doc: "master secrets of [bus authentication](#bus-authentication), the first current; never logged",
  }),
  setting("SWITCHYARD_BUS_KEY", "busAuth.publisherKeys", list(parsePublisherKey, "`KID:KEY:IDENTITY[,…]`", ["k1:short:harness:writer"]), {
    group: "busAuth",
    readBy: ["harness", "gateway"],
    secret: true,
    defaultText: "(none)",
    doc: "a standalone harness's or gateway's own publisher key, as printed by `switchyard bus key --sender IDENTITY`; never logged",
  }),
  setting(ENCRYPTION_KEY_VARIABLE, "origin.encryptionKeys", parsed(parseEncryptionKeys, "`KID:BASE64[,…]` (32-byte keys)", ["k1:c2hvcnQ="]), {
    group: "origin",
    readBy: ["coordinator", "gateway"],
    secret: true,
    defaultText: "(none: connections refused)",
    doc: "the vault's key ring, the first key seals; coordinators and gateways only, never harnesses; never logged ([Origin replies](#origin-replies))",
  }),
  setting("SWITCHYARD_INGEST_MAX_BODY_BYTES", "origin.ingestMaxBodyBytes", integer(1), {
    group: "origin",
    readBy: ["gateway"],
    doc: "largest webhook body (bytes) an ingest endpoint reads (413 beyond)",
  }),
  setting("SWITCHYARD_REPLY_GRACE_MS", "origin.replyGraceMs", integer(0), {
    group: "origin",
    readBy: ["coordinator", "gateway"],
    doc: "how long (ms) after a task ended its worker (or the tenant) may still reply",
  }),
  setting("SWITCHYARD_REPLY_TASK_CAP", "origin.replyTaskCap", integer(0), {
    group: "origin",
    readBy: ["coordinator", "gateway"],
    doc: "replies one task may make in its lifetime (refusals not counted)",
  }),
  setting("SWITCHYARD_REPLY_RATE_PER_MIN", "origin.replyRatePerMinute", integer(1), {
    group: "origin",
    readBy: ["coordinator", "gateway"],
    doc: "token bucket per (tenant, actor): replies per minute",
  }),
  setting("SWITCHYARD_REPLY_BURST", "origin.replyBurst", integer(1), { group: "origin", readBy: ["coordinator", "gateway"], doc: "token bucket per (tenant, actor): the burst" }),
  setting("SWITCHYARD_REPLY_COST", "origin.replyCost", nonNegativeNumber, {
    group: "origin",
    readBy: ["coordinator", "gateway"],
    doc: "cost accrued per allowed reply, in the tenant's cost units",
  }),
  setting("SWITCHYARD_REPLY_TIMEOUT_MS", "origin.replyTimeoutMs", integer(1), { group: "origin", readBy: ["coordinator"], doc: "one provider request's deadline (ms)" }),
  setting("SWITCHYARD_REPLY_DIAL_ATTEMPTS", "origin.replyDialAttempts", integer(1), {
    group: "origin",
    readBy: ["coordinator"],
    doc: "dials of one reply whose connection failed or got 429 (then it is `failed`)",
  }),
];
