/** An audit entry for chain tests: tenant `orgId`, the `n`th of its test, whatever `overrides` changes. */
import type { AuditEntry } from "../../src/domain.js";

export function auditEntry(orgId: string, n: number, overrides: Partial<AuditEntry> = {}): AuditEntry {
  return {
    orgId,
    action: "dispatch",
    actor: "coordinator",
    destination: "role:writer",
    verdict: "allow",
    rule: "builtin:default",
    reason: `entry ${n}`,
    payloadHash: "",
    cost: n / 10,
    taskId: `task-${n % 3}`,
    stepId: `step-${n}`,
    envelopeId: `env-${orgId}-${n}`,
    atMs: 1_700_000_000_000 + n,
    ...overrides,
  };
}
