/**
 * The policy a tenant gets until it stores one of its own.
 *
 * Built-in default policy (`BUILTIN_DEFAULT_POLICY`):
 * - `a2a_egress` → no rule of its own: allowed (or parked by an approval hint) like any hop. What still stands
 *   between a step and a foreign agent: the tenant's A2A_EGRESS_ENABLED switch (`builtin:egress-disabled`), the
 *   FOREIGN dispatcher, which refuses an agent that is not registered and enabled (`FOREIGN_UNAVAILABLE`) or whose
 *   clearance ceiling is below the hop's floor (`CLEARANCE_DENIED`), and the egress guard's host allowlist.
 * - `origin_reply` → no rule of its own: allowed like any hop. The operator's gate is the REPLY_ENABLED flag
 *   (global and per tenant, off by default), checked before the governor; a tenant policy can deny replies or
 *   require an approval for them (`action: origin_reply`).
 * - a step marked `approval: true` in its workflow → **requires_approval** (`builtin:approval-hint`).
 * - everything else → **allow** (`builtin:default`).
 *
 * The built-in guards apply before these rules, as for any policy: clearance ceilings (none in this policy)
 * and the task budget (`over_budget: deny`). A tenant policy replaces this one entirely, so a tenant that wants
 * workflow approval hints honoured writes its own `when: "hop.approval_hint"` rule.
 */
import { compilePolicy, type CompiledPolicy, type PolicyDocument } from "./policy.js";

export const BUILTIN_DEFAULT_DOCUMENT: PolicyDocument = {
  description: "Switchyard built-in default policy",
  default: "allow",
  over_budget: "deny",
  clearance: {},
  rules: [
    {
      id: "builtin:approval-hint",
      when: "hop.approval_hint",
      verdict: "requires_approval",
      reason: "the workflow step asks for a human approval",
    },
  ],
};

// Compiling is pure CPU work on a constant (no I/O), so doing it at import keeps one shared instance.
export const BUILTIN_DEFAULT_POLICY: CompiledPolicy = compilePolicy(BUILTIN_DEFAULT_DOCUMENT, { allowBuiltinIds: true });
