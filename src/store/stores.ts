/**
 * Every storage port outside the engine's (issue 27 §2), one field per concern. runtime.ts builds the Postgres
 * adapters once (postgres-stores.ts) and exposes them as `runtime.stores`; features take the port they need in
 * their options.
 */
import type { ReplyStore } from "./replies/reply-store.js";
import type { AuditStore } from "./audit/audit-store.js";
import type { CheckpointKeyStore, CheckpointStore } from "./audit/checkpoint-store.js";
import type { PolicyStore } from "./policies/policy-store.js";
import type { BridgeStore } from "./bridges/bridge-store.js";
import type { SessionStore } from "./sessions/session-store.js";
import type { DeliveryStore } from "./ingest/delivery-store.js";
import type { IngestEndpointStore } from "./ingest/endpoint-store.js";
import type { SealedSecretStore } from "./vault/sealed-secret-store.js";
import type { ApiKeyStore, TenantStore } from "./tenancy/tenancy-store.js";
import type { ConnectionStore } from "./vault/connection-store.js";
import type { ForeignAgentStore } from "./foreign/foreign-agent-store.js";
import type { HeldStepStore } from "./limits/held-step-store.js";
import type { TaskStore } from "./tasks/task-store.js";
import type { TaskReadStore } from "./tasks/task-read-store.js";
import type { StallFactStore } from "./diagnosis/stall-fact-store.js";
import type { MetricStore } from "./metrics/metric-store.js";
import type { EchoStore } from "./ingest/echo-store.js";
import type { ApprovalStore, LinkKeyStore, UsedLinkTokenStore } from "./approvals/approval-store.js";
import type { LimitStore } from "./limits/limit-store.js";
import type { FlagStore } from "./flags/flag-store.js";
import type { CoordinatorStore } from "./coordinator/coordinator-store.js";

export interface Stores {
  approvals: ApprovalStore;
  linkKeys: LinkKeyStore;
  linkTokens: UsedLinkTokenStore;
  limits: LimitStore;
  flags: FlagStore;
  replies: ReplyStore;
  audit: AuditStore;
  checkpoints: CheckpointStore;
  checkpointKeys: CheckpointKeyStore;
  policies: PolicyStore;
  bridges: BridgeStore;
  sessions: SessionStore;
  ingestDeliveries: DeliveryStore;
  ingestEndpoints: IngestEndpointStore;
  sealedSecrets: SealedSecretStore;
  connections: ConnectionStore;
  foreignAgents: ForeignAgentStore;
  /** What the fairness releaser reads to plan releases. */
  heldSteps: HeldStepStore;
  /** The task service's: starts' writes and a task's view. */
  tasks: TaskStore;
  /** The gateway's read models of tasks: the listing, a task page's step history, Watch's fingerprints. */
  taskReads: TaskReadStore;
  /** What a stall diagnosis reads of the approval or bridge a step waits on. */
  stallFacts: StallFactStore;
  /** The scrape-time gauges' reads. */
  metricReads: MetricStore;
  /** Echo suppression: whether an inbound comment is one of our own replies. */
  echoes: EchoStore;
  tenants: TenantStore;
  apiKeys: ApiKeyStore;
  /** The coordinator process's own (shard leases, what its sweeps read, the outbox relay). */
  coordinator: CoordinatorStore;
}
