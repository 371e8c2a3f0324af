/** A step the admission gate held back (fairness limits), as the decision code records it and `held_steps` stores it. */
export interface HeldStep {
  orgId: string;
  taskId: string;
  stepId: string;
  destination: string;
  /** 1–5, higher first within the tenant. */
  priority: number;
  concurrencyKey: string | null;
  /** The key's limit when it has one (the releaser counts the key's room from it). */
  concurrencyLimit: number | null;
  reason: string;
  heldAtMs: number;
}
