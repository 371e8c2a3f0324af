/** Connections, the bus, the coordinator, shards, harnesses, the gateway, metrics, checkpoints, tracing, services. */
import { redactRedisUrl } from "../bus/redis-url.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { boolean, cidrList, ed25519Pem, integer, keyPrefix, list, oneOf, optionalText, redactUrl, redisUrl, text, url, type FieldOf } from "./fields.js";
import { input, setting, type Variable } from "./variable.js";

/** pino's levels; anything else would fail inside the logger, far from its cause. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

// Config.logLevel stays a string (its type is public); the default is one of the levels.
const logLevel: FieldOf<string> = ({ name, fallback }) => oneOf(LOG_LEVELS)({ name, fallback: fallback as (typeof LOG_LEVELS)[number] });

const OTEL_TRACES_EXPORTERS = ["otlp", "console", "none"] as const;

export const coreVariables: readonly Variable[] = [
  setting("REDIS_URL", "redisUrl", redisUrl, {
    group: "connections",
    readBy: ["all"],
    redact: redactRedisUrl,
    doc:
      "Redis; must run with `maxmemory-policy noeviction` (checked at start-up, on every master of a cluster) and, in production, AOF " +
      "(`appendonly yes`, `appendfsync everysec`). `redis://` or `rediss://` (TLS) for one server; " +
      "`redis+cluster://[USER:PASSWORD@]host:port,host:port[,…]` (or `rediss+cluster://`) for a Redis Cluster: two or three seed nodes " +
      "are enough, no database number (see [Redis Cluster](#redis-cluster))",
  }),
  setting("DATABASE_URL", "databaseUrl", url(["postgres:", "postgresql:"]), {
    group: "connections",
    readBy: ["all"],
    redact: redactUrl,
    doc: "PostgreSQL; `migrate` creates the database when missing",
  }),
  setting("SWITCHYARD_LOG_LEVEL", "logLevel", logLevel, {
    group: "connections",
    readBy: ["all"],
    doc: "pino level of the long-running processes",
  }),
  setting("SWITCHYARD_KEY_PREFIX", "bus.keyPrefix", keyPrefix, {
    group: "connections",
    readBy: ["all"],
    doc: "prefix of every Redis key; every process of a deployment must use the same (it names the queues); set but empty is no prefix",
  }),
  setting("SWITCHYARD_READ_BATCH", "bus.readBatch", integer(1), { group: "bus", readBy: ["all"], doc: "entries per stream read" }),
  setting("SWITCHYARD_BLOCK_MS", "bus.blockMs", integer(1), { group: "bus", readBy: ["all"], doc: "longest blocking read (ms)" }),
  setting("SWITCHYARD_RECLAIM_IDLE_MS", "bus.reclaimIdleMs", integer(1), {
    group: "bus",
    readBy: ["all"],
    doc: "an unacknowledged entry idle this long (ms) is reclaimed from its (presumed dead) consumer",
  }),
  setting("SWITCHYARD_MAX_DELIVERIES", "bus.maxDeliveries", integer(1), { group: "bus", readBy: ["all"], doc: "deliveries before an entry goes to its dead-letter stream" }),
  setting("SWITCHYARD_TRIM_MAXLEN", "bus.trimMaxLen", integer(1), {
    group: "bus",
    readBy: ["all"],
    doc: "streams are trimmed towards this length, never below unacknowledged work",
  }),
  setting("SWITCHYARD_MAX_PAYLOAD_BYTES", "bus.maxPayloadBytes", integer(1), { group: "bus", readBy: ["all"], doc: "envelope payload cap (bytes)" }),
  setting("SWITCHYARD_BATCH_SIZE", "coordinator.batchSize", integer(1), { group: "coordinator", readBy: ["coordinator"], doc: "inbound envelopes per coordinator transaction" }),
  setting("SWITCHYARD_STEP_TIMEOUT_MS", "coordinator.defaultStepTimeoutMs", integer(1), {
    group: "coordinator",
    readBy: ["coordinator"],
    doc: "step timeout when the workflow sets none (ms)",
  }),
  setting("SWITCHYARD_SWEEP_INTERVAL_MS", "coordinator.sweepIntervalMs", integer(10), {
    group: "coordinator",
    readBy: ["coordinator"],
    doc: "how often due steps (timeouts, retry backoff, approval expiry) are swept (ms)",
  }),
  setting("SWITCHYARD_OUTBOX_STALE_MS", "coordinator.outboxStaleMs", integer(0), {
    group: "coordinator",
    readBy: ["coordinator"],
    doc: "outbox rows older than this (ms) are published by the relay sweep",
  }),
  // At least an hour: a shorter window could forget an envelope the stream or the outbox relay still redelivers.
  setting("SWITCHYARD_DEDUPE_RETENTION_MS", "coordinator.dedupeRetentionMs", integer(3_600_000), {
    group: "coordinator",
    readBy: ["coordinator"],
    doc: "how long (ms) applied envelope ids are kept to drop a redelivery (`processed_envelopes`, trimmed every 10 s)",
  }),
  setting("SWITCHYARD_APPROVAL_TTL_MS", "coordinator.approvalTtlMs", integer(1), {
    group: "coordinator",
    readBy: ["coordinator"],
    doc: "an approval not decided within this long (ms) expires: denied, the step fails closed ([Approvals](#approvals))",
  }),
  setting("SWITCHYARD_DELEGATION_MAX_OUTSTANDING", "coordinator.maxOutstandingSubQueries", integer(1), {
    group: "coordinator",
    readBy: ["coordinator"],
    doc: "sub-queries one step may have outstanding at once ([fan-out](#fan-out-the-orchestrator-pattern)); a turn over it fails the step with `DELEGATION_LIMIT`",
  }),
  setting("SWITCHYARD_DELEGATION_MAX_PER_ATTEMPT", "coordinator.maxSubQueriesPerAttempt", integer(1), {
    group: "coordinator",
    readBy: ["coordinator"],
    doc: "sub-queries one step attempt may ask in all; a turn over it fails the step with `DELEGATION_LIMIT`",
  }),
  setting("SWITCHYARD_AUDIT_HEADS_IN_MEMORY", "coordinator.auditHeadsInMemory", boolean, {
    group: "coordinator",
    readBy: ["coordinator"],
    doc: "the coordinator keeps its tenants' audit-chain heads in memory and appends without locking them first (`false`: lock every batch; [Scale-out](#scale-out-tenant-shards))",
  }),
  setting("SWITCHYARD_SHARD_COUNT", "shards.count", integer(1, 1024), {
    group: "shards",
    readBy: ["all"],
    doc: "tenant shards; recorded by the first coordinator, every process must use the same ([Scale-out](#scale-out-tenant-shards))",
  }),
  setting("SWITCHYARD_SHARD_LEASE_TTL_MS", "shards.leaseTtlMs", integer(500), {
    group: "shards",
    readBy: ["coordinator"],
    doc: "how long (ms) a coordinator's shard lease lasts unrenewed; also every session's `idle_in_transaction_session_timeout`",
  }),
  setting("SWITCHYARD_SHUTDOWN_GRACE_MS", "harness.shutdownGraceMs", integer(0), {
    group: "harness",
    readBy: ["harness", "gateway"],
    doc: "how long (ms) in-flight handlers (a gateway: calls in flight) may finish after a stop signal",
  }),
  setting("SWITCHYARD_HEARTBEAT_MS", "harness.heartbeatMs", integer(100), {
    group: "harness",
    readBy: ["harness"],
    doc: "how often (ms) a running handler's entry is touched; must stay below `SWITCHYARD_RECLAIM_IDLE_MS`",
  }),
  setting("SWITCHYARD_GATEWAY_HOST", "gateway.host", text, {
    group: "gateway",
    readBy: ["gateway"],
    doc: "where `start gateway` / `start all` listen (`0.0.0.0` in a container)",
  }),
  setting("SWITCHYARD_GATEWAY_PORT", "gateway.port", integer(0, 65_535), { group: "gateway", readBy: ["gateway"], doc: "the gateway's TCP port (0: any free port)" }),
  setting("SWITCHYARD_PUBLIC_URL", "gateway.publicUrl", url(["http:", "https:"], { trimSlash: true }), {
    group: "gateway",
    readBy: ["gateway", "coordinator"],
    doc: "base URL approvers and FOREIGN agents reach the gateway at; approval links and callback URLs are built from it",
  }),
  setting("SWITCHYARD_GATEWAY_MAX_BODY_BYTES", "gateway.maxBodyBytes", integer(1), { group: "gateway", readBy: ["gateway"], doc: "largest API request body (bytes)" }),
  setting("SWITCHYARD_WATCH_MAX_PER_TENANT", "gateway.watchMaxPerTenant", integer(1), {
    group: "gateway",
    readBy: ["gateway"],
    doc: "`TaskService.Watch` streams one tenant may have open; one more answers `resource_exhausted`",
  }),
  setting("SWITCHYARD_WATCH_MAX_STREAMS", "gateway.watchMaxStreams", integer(1), {
    group: "gateway",
    readBy: ["gateway"],
    doc: "`TaskService.Watch` streams the whole gateway may have open",
  }),
  setting("SWITCHYARD_CONSOLE_SESSION_IDLE_MS", "gateway.consoleSessionIdleMs", integer(1000), {
    group: "gateway",
    readBy: ["gateway"],
    doc: "a [console](#console) session unused this long (ms) ends; the person signs in again",
  }),
  setting("SWITCHYARD_CONSOLE_SESSION_MAX_MS", "gateway.consoleSessionMaxMs", integer(1000), {
    group: "gateway",
    readBy: ["gateway"],
    doc: "a [console](#console) session ends this long (ms) after sign-in, however busy",
  }),
  setting("SWITCHYARD_TRUSTED_PROXIES", "gateway.trustedProxies", cidrList, {
    group: "gateway",
    readBy: ["gateway"],
    defaultText: "(none)",
    doc:
      "IP addresses and CIDRs (IPv4, IPv6) of the proxies in front of the gateway, e.g. your Ingress controller's pod CIDR: " +
      "only from these is `X-Forwarded-For` read, right to left past them, and the first other address is the client that " +
      "[console](#console) sign-in failures count against. Empty: the header is ignored (behind a proxy, everyone is the proxy)",
  }),
  setting("SWITCHYARD_METRICS_PORT", "metrics.port", integer(0, 65_535), {
    group: "metrics",
    readBy: ["coordinator", "harness"],
    defaultText: "(off)",
    doc: "a standalone `start coordinator` or `start harness` serves `http://HOST:PORT/metrics`, `/healthz` and `/readyz` (the gateway serves its own)",
  }),
  setting("SWITCHYARD_METRICS_HOST", "metrics.host", text, {
    group: "metrics",
    readBy: ["coordinator", "harness"],
    doc: "the interface of that port (`0.0.0.0` in a container)",
  }),
  setting("SWITCHYARD_CHECKPOINT_KEY", "checkpoints.signingKeyPem", ed25519Pem, {
    group: "checkpoints",
    readBy: ["coordinator"],
    secret: true,
    defaultText: "(none: a key kept in `checkpoint_keys`)",
    doc: "Ed25519 key (PKCS#8 PEM) the coordinators sign audit checkpoints with ([Signed checkpoints](#signed-checkpoints)); a secret",
  }),
  setting("SWITCHYARD_CHECKPOINT_EVERY_ROWS", "checkpoints.everyRows", integer(1), {
    group: "checkpoints",
    readBy: ["coordinator"],
    doc: "a tenant's chain head is signed once this many rows are unsigned…",
  }),
  setting("SWITCHYARD_CHECKPOINT_EVERY_MS", "checkpoints.everyMs", integer(1), {
    group: "checkpoints",
    readBy: ["coordinator"],
    doc: "…or once the oldest unsigned row is this old (ms)",
  }),
  // Checked where used: the CLI's message names the flag too (`--url / SWITCHYARD_URL`), and --url overrides it.
  setting("SWITCHYARD_URL", "remote.url", optionalText, {
    group: "cli",
    readBy: ["CLI"],
    doc: "send tenant commands to this gateway instead of the database (`--url`; see [API](#api))",
  }),
  setting("SWITCHYARD_TOKEN", "remote.token", optionalText, {
    group: "cli",
    readBy: ["CLI"],
    secret: true,
    doc: "the API key for `SWITCHYARD_URL` (`--token`); a secret",
  }),
  input("OTEL_SDK_DISABLED", false, boolean, {
    group: "telemetry",
    readBy: ["all"],
    doc: "`true`: no tracing, whatever else is set",
  }),
  input<string[]>("OTEL_TRACES_EXPORTER", [], list(
    (item, where) => {
      if ((OTEL_TRACES_EXPORTERS as readonly string[]).includes(item.toLowerCase())) return item.toLowerCase();
      throw new SwitchyardError(ErrorCode.Config, `${where} must be one of ${OTEL_TRACES_EXPORTERS.join(", ")}, got ${JSON.stringify(item)}`);
    },
    `${OTEL_TRACES_EXPORTERS.map((e) => `\`${e}\``).join(", ")}, comma-separated`,
    ["jaeger"],
  ), {
    group: "telemetry",
    readBy: ["all"],
    defaultText: "(none)",
    doc: "tracing is on when this names `otlp` or `console` (spans to OTLP/HTTP, or each span printed on stdout), or when an OTLP endpoint is set (then `otlp`); `none` alone keeps it off even with an endpoint",
  }),
  input<string | null>("OTEL_EXPORTER_OTLP_ENDPOINT", null, url(["http:", "https:"]), {
    group: "telemetry",
    readBy: ["all"],
    defaultText: "(none)",
    doc: "OTLP/HTTP collector base URL; setting it turns tracing on",
  }),
  input<string | null>("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", null, url(["http:", "https:"]), {
    group: "telemetry",
    readBy: ["all"],
    defaultText: "(none)",
    doc: "OTLP/HTTP traces URL (overrides the base URL for traces); setting it turns tracing on",
  }),
  setting("OTEL_SERVICE_NAME", "telemetry.serviceName", optionalText, {
    group: "telemetry",
    readBy: ["all"],
    defaultText: "`switchyard-<process>`",
    doc: "the service name on exported spans",
  }),
  setting("SWITCHYARD_EMBEDDED_SERVICES", "services.embedded", oneOf(["auto", "off"]), {
    group: "services",
    readBy: ["CLI"],
    doc: "`auto`: `demo` and `start all` start an embedded PostgreSQL / Redis when `DATABASE_URL` / `REDIS_URL` are unset and nothing answers on the defaults; `off`: never",
  }),
  setting("SWITCHYARD_DATA_DIR", "services.dataDir", text, {
    group: "services",
    readBy: ["CLI"],
    doc: "where embedded services keep their data (relative to the working directory)",
  }),
];

