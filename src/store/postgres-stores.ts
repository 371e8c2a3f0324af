/**
 * The Postgres adapters of every port in `Stores` (stores.ts), built once by the composition roots (runtime.ts).
 */
import { createPostgresReplyStore } from "./replies/postgres-reply-store.js";
import { createPostgresAuditStore } from "./audit/postgres-audit-store.js";
import { createPostgresCheckpointStore } from "./audit/postgres-checkpoint-store.js";
import { createPostgresCheckpointKeyStore } from "./audit/postgres-checkpoint-key-store.js";
import { createPostgresPolicyStore } from "./policies/postgres-policy-store.js";
import { createPostgresBridgeStore } from "./bridges/postgres-bridge-store.js";
import { createPostgresSessionStore } from "./sessions/postgres-session-store.js";
import { createPostgresDeliveryStore } from "./ingest/postgres-delivery-store.js";
import { createPostgresIngestEndpointStore } from "./ingest/postgres-endpoint-store.js";
import { createPostgresSealedSecretStore } from "./vault/postgres-sealed-secret-store.js";
import { createPostgresApiKeyStore, createPostgresTenantStore } from "./tenancy/postgres-tenancy-store.js";
import { createPostgresConnectionStore } from "./vault/postgres-connection-store.js";
import { createPostgresForeignAgentStore } from "./foreign/postgres-foreign-agent-store.js";
import { createPostgresHeldStepStore } from "./limits/postgres-held-step-store.js";
import { createPostgresTaskStore } from "./tasks/postgres-task-store.js";
import { createPostgresTaskReadStore } from "./tasks/postgres-task-read-store.js";
import { createPostgresApprovalStore } from "./approvals/postgres-approval-store.js";
import { createPostgresLinkKeyStore, createPostgresUsedLinkTokenStore } from "./approvals/postgres-link-key-store.js";
import { createPostgresLimitStore } from "./limits/postgres-limit-store.js";
import { createPostgresFlagStore } from "./flags/postgres-flag-store.js";
import { createPostgresCoordinatorStore } from "./coordinator/postgres-coordinator-store.js";
import { createPostgresStallFactStore } from "./diagnosis/postgres-stall-fact-store.js";
import { createPostgresMetricStore } from "./metrics/postgres-metric-store.js";
import { createPostgresEchoStore } from "./ingest/postgres-echo-store.js";
import type { Stores } from "./stores.js";

export function createPostgresStores(): Stores {
  return {
    approvals: createPostgresApprovalStore(),
    linkKeys: createPostgresLinkKeyStore(),
    linkTokens: createPostgresUsedLinkTokenStore(),
    limits: createPostgresLimitStore(),
    flags: createPostgresFlagStore(),
    replies: createPostgresReplyStore(),
    audit: createPostgresAuditStore(),
    checkpoints: createPostgresCheckpointStore(),
    checkpointKeys: createPostgresCheckpointKeyStore(),
    policies: createPostgresPolicyStore(),
    bridges: createPostgresBridgeStore(),
    sessions: createPostgresSessionStore(),
    ingestDeliveries: createPostgresDeliveryStore(),
    ingestEndpoints: createPostgresIngestEndpointStore(),
    sealedSecrets: createPostgresSealedSecretStore(),
    connections: createPostgresConnectionStore(),
    foreignAgents: createPostgresForeignAgentStore(),
    heldSteps: createPostgresHeldStepStore(),
    tasks: createPostgresTaskStore(),
    taskReads: createPostgresTaskReadStore(),
    stallFacts: createPostgresStallFactStore(),
    metricReads: createPostgresMetricStore(),
    echoes: createPostgresEchoStore(),
    tenants: createPostgresTenantStore(),
    apiKeys: createPostgresApiKeyStore(),
    coordinator: createPostgresCoordinatorStore(),
  };
}
