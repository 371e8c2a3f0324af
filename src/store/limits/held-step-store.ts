/**
 * The held steps' port (issue 27 §2, fairness): what the releaser (fairness/releaser.ts) reads of `held_steps`,
 * `steps` and `dispatch_buckets` to plan which held steps go next — the loads per (destination, tenant), the
 * tenants' own usage, the held steps a plan names, and the held-steps gauge. Reads only: a release is an engine
 * event. Every method runs on the connection it is given (an inline release reads inside the engine batch's
 * transaction, so it sees the batch's own writes). The Postgres adapter is postgres-held-step-store.ts.
 */
import type { Queryable } from "../db.js";

/** Held and in-flight counts of one tenant on one destination. */
export interface HeldLoad {
  destination: string;
  orgId: string;
  inFlight: number;
  held: number;
}

/** What limited tenants use now: steps in flight overall, and their token buckets (by `pairKey(orgId, destination)`). */
export interface TenantUsage {
  inFlight: Map<string, number>;
  buckets: Map<string, { tokens: number; atMs: number }>;
}

/** A held step a plan picked, in its tenant's release order. */
export interface PickedHeldStep {
  orgId: string;
  destination: string;
  taskId: string;
  stepId: string;
  seq: string;
  heldAtMs: number;
}

export interface HeldStepStore {
  /**
   * Held (up to `cap` per pair, keyed steps only within their key's room) and in-flight counts per (destination,
   * tenant), on every destination with held steps, or on `only`.
   */
  loads(db: Queryable, cap: number, only?: readonly string[]): Promise<HeldLoad[]>;
  /** Steps in flight per tenant and the tenants' dispatch buckets, for `orgIds`. */
  usage(db: Queryable, orgIds: readonly string[]): Promise<TenantUsage>;
  /** Up to `n` held steps of each (destination, tenant) asked for, each pair's in priority then arrival order. */
  pick(db: Queryable, asked: ReadonlyArray<{ destination: string; orgId: string; n: number }>): Promise<PickedHeldStep[]>;
  /** Every held step counted per (destination, tenant): the gauge's full count. */
  countHeld(db: Queryable): Promise<Array<{ destination: string; orgId: string; n: number }>>;
}
