/**
 * Every storage port outside the engine's (issue 27 §2), one field per concern. runtime.ts builds the Postgres
 * adapters once (postgres-stores.ts) and exposes them as `runtime.stores`; features take the port they need in
 * their options.
 */
import type { ReplyStore } from "./replies/reply-store.js";
import type { AuditStore } from "./audit/audit-store.js";
import type { PolicyStore } from "./policies/policy-store.js";
import type { BridgeStore } from "./bridges/bridge-store.js";
import type { SessionStore } from "./sessions/session-store.js";
import type { DeliveryStore } from "./ingest/delivery-store.js";
import type { IngestEndpointStore } from "./ingest/endpoint-store.js";
import type { SealedSecretStore } from "./vault/sealed-secret-store.js";
import type { ApprovalStore, LinkKeyStore, UsedLinkTokenStore } from "./approvals/approval-store.js";
import type { LimitStore } from "./limits/limit-store.js";
import type { FlagStore } from "./flags/flag-store.js";

export interface Stores {
  approvals: ApprovalStore;
  linkKeys: LinkKeyStore;
  linkTokens: UsedLinkTokenStore;
  limits: LimitStore;
  flags: FlagStore;
  replies: ReplyStore;
  audit: AuditStore;
  policies: PolicyStore;
  bridges: BridgeStore;
  sessions: SessionStore;
  ingestDeliveries: DeliveryStore;
  ingestEndpoints: IngestEndpointStore;
  sealedSecrets: SealedSecretStore;
}
