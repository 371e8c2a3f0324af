/**
 * The approvals' storage ports (issue 27 §2): approval rows (opened by the engine, decided by the task service,
 * listed by the API, expired by the sweep) and the signed links' keys and used tokens. The Postgres adapters are
 * postgres-approval-store.ts and postgres-link-key-store.ts beside this file.
 */
import type { ApprovalSpec } from "../../core/model.js";
import type { OwnedShards } from "../../coordinator/shard-ownership.js";
import type { TenantSelection } from "../../flags/flag-types.js";
import type { Queryable } from "../db.js";

/** How a decision arrived. */
export type ApprovalDecisionVia = "api" | "console" | "cli" | "link" | "expiry";

export interface ApprovalRow {
  id: string;
  orgId: string;
  taskId: string;
  stepId: string;
  action: string;
  destination: string;
  rule: string;
  reason: string;
  cost: number;
  status: "pending" | "approved" | "denied";
  decidedBy: string | null;
  decisionReason: string | null;
  createdAt: string;
  decidedAt: string | null;
  /** The deadline; null only for approvals opened before expiry existed. */
  expiresAt: string | null;
  decidedVia: ApprovalDecisionVia | null;
}

export interface ApprovalDecision {
  approvalId: string;
  approved: boolean;
  actor: string;
  reason: string;
}

export interface OverdueApproval {
  id: string;
  orgId: string;
  expiresAt: string;
}

/**
 * Approval rows, each closed exactly once. Every method runs on the `Queryable` it is handed: the engine's or the
 * deciding transaction, or a tenant-scoped one (row-level security) for the API's reads.
 */
export interface ApprovalStore {
  /** Opens approvals; an id already stored is left as it is. */
  insert(tx: Queryable, approvals: readonly ApprovalSpec[]): Promise<void>;
  /** Closes the pending ones among `decisions`; an approval already decided is left as it is. */
  close(tx: Queryable, decisions: readonly ApprovalDecision[]): Promise<void>;
  /** The tenant's approvals, oldest first. */
  list(db: Queryable, orgId: string, options?: { status?: ApprovalRow["status"]; taskId?: string }): Promise<ApprovalRow[]>;
  /** One approval of the tenant; `forUpdate` locks its row until `db`'s transaction ends. */
  get(db: Queryable, orgId: string, approvalId: string, forUpdate?: boolean): Promise<ApprovalRow | undefined>;
  /** Denies a pending approval whose step moved on without it (task cancelled or failed), as `decidedBy`. */
  closeUnparked(tx: Queryable, approvalId: string, decidedBy: string): Promise<void>;
  /** Records how the decision arrived, in the deciding transaction after the engine closed the row. */
  recordDecisionVia(tx: Queryable, orgId: string, approvalId: string, via: ApprovalDecisionVia): Promise<void>;
  /**
   * Pending approvals whose deadline is at or before `nowMs`, oldest deadline first, across tenants (an operator
   * read), of the tenants `tenants` selects and the shards `shards` owns (all when absent).
   */
  listOverdue(db: Queryable, nowMs: number, limit: number, tenants?: TenantSelection, shards?: OwnedShards): Promise<OverdueApproval[]>;
}

/** A tenant's link key: it signs approval links, A2A callback tokens and notification secrets. */
export interface LinkKey {
  orgId: string;
  kid: string;
  secret: Buffer;
  createdAt: string;
  retiredAt: string | null;
}

/** A key as operators see it: never the secret. */
export interface LinkKeyInfo {
  kid: string;
  createdAt: string;
  retiredAt: string | null;
  /** The key new links are signed with. */
  signing: boolean;
}

/**
 * Per-tenant HMAC keys (`link_keys`). The newest key not retired signs; every key verifies until retired, so
 * rotating never breaks a link already sent. Read with the owner's pool: the tenant role cannot see the table.
 */
export interface LinkKeyStore {
  /**
   * The tenant's signing key, created on first use. Concurrent first uses inside transactions share one key; a
   * caller outside a transaction may race another and create a second (both verify, the newer signs).
   */
  ensure(db: Queryable, orgId: string): Promise<LinkKey>;
  /** Creates a new signing key and returns its kid. */
  rotate(db: Queryable, orgId: string): Promise<string>;
  /** Retires a key: what it signed stops working at once. NOT_FOUND when the tenant has no such key. */
  retire(db: Queryable, orgId: string, kid: string): Promise<{ kid: string; retiredAt: string }>;
  /** One key of one tenant, retired or not. */
  get(db: Queryable, orgId: string, kid: string): Promise<LinkKey | undefined>;
  /** The tenant's keys, newest first, without secrets. */
  list(db: Queryable, orgId: string): Promise<LinkKeyInfo[]>;
}

/** The hashes of the link tokens redeemed (`used_link_tokens`): a link works once. */
export interface UsedLinkTokenStore {
  wasUsed(db: Queryable, tokenHash: string): Promise<boolean>;
  /** Recorded in the deciding transaction, so a decision and its token's use commit together. */
  record(tx: Queryable, used: { tokenHash: string; orgId: string; subject: string }): Promise<void>;
}
