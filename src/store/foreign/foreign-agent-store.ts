/**
 * The foreign agent registry's port (issue 27 §2): table `foreign_agents`, per tenant, where a `foreign:KEY`
 * destination points and what it may be sent. It never holds a secret (`credentialRef` names one). What a
 * registration may hold is checked by foreign/registry.ts before it gets here; the dispatcher, sender, poller and
 * sweep look agents up through `find`. The Postgres adapter is postgres-foreign-agent-store.ts.
 */
import type { Queryable } from "../db.js";

/** An A2A dialect preference (`auto` prefers v1.0), or `mcp`: a tool reached over the Model Context Protocol. */
export type ForeignProtocol = "auto" | "1.0" | "0.3" | "mcp";

/** How an A2A agent's results come back: push when its card offers it (else polling), or forced either way. */
export type ForeignDelivery = "auto" | "push" | "poll";

export interface ForeignAgentRecord {
  orgId: string;
  agentKey: string;
  baseUrl: string;
  protocol: ForeignProtocol;
  credentialRef: string | null;
  allowHost: string;
  skills: string[];
  clearanceCeiling: number;
  costEstimate: number;
  enabled: boolean;
  /** Whether a timed-out or failed hop may be re-sent (a new task at the agent) under the step's `retries`. */
  idempotent: boolean;
  /** The MCP tool called (protocol `mcp` only). */
  tool: string | null;
  /** A2A only: push or poll (`auto`: push when the card offers it). */
  delivery: ForeignDelivery;
  /** Step-input fields that may leave the perimeter (top-level keys or dotted paths, send-fields.ts); null: the whole input. */
  sendFields: string[] | null;
  /** Cost units per second of elapsed time, added to `costEstimate` when the agent reports no usage. */
  costPerSecond: number;
  createdAt: Date;
  updatedAt: Date;
}

/** Every column a registration or an update writes, checked and with its defaults filled in. */
export type ForeignAgentValues = Omit<ForeignAgentRecord, "orgId" | "agentKey" | "createdAt" | "updatedAt">;

export interface ForeignAgentStore {
  /** Undefined when the tenant has an agent of that key already (nothing written). */
  insert(db: Queryable, orgId: string, agentKey: string, values: ForeignAgentValues): Promise<ForeignAgentRecord | undefined>;
  find(db: Queryable, orgId: string, agentKey: string): Promise<ForeignAgentRecord | undefined>;
  /** `find` with the row locked (`FOR UPDATE`) in the caller's transaction. */
  lock(db: Queryable, orgId: string, agentKey: string): Promise<ForeignAgentRecord | undefined>;
  /** The tenant's agents by key. */
  list(db: Queryable, orgId: string): Promise<ForeignAgentRecord[]>;
  /** Writes every value of an existing agent and touches `updated_at`. */
  update(db: Queryable, orgId: string, agentKey: string, values: ForeignAgentValues): Promise<ForeignAgentRecord>;
  /** Disables it (`updated_at` moves only when it was enabled); undefined when there is no such agent. */
  disable(db: Queryable, orgId: string, agentKey: string): Promise<ForeignAgentRecord | undefined>;
}
