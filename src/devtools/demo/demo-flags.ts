/**
 * Everything is dormant by default, so the demo switches on what its run needs — the bus, the coordinator for
 * its tenant, the harnesses of its roles, bus routing for the role that delegates, and A2A egress for its tenant
 * (the foreign hop) — through the same audited path as `switchyard flags set`, and says so in one line. Flags
 * already on are left alone.
 */
import type { FlagName, ScopeKind } from "../../flags/flag-types.js";
import { describeScope, setFlag } from "../../flags/flag-changes.js";
import { createPostgresFlagStore } from "../../store/flags/postgres-flag-store.js";
import type { LiveFlags } from "../../flags/live-flags.js";
import type { Pool } from "../../store/db.js";

export interface DemoFlagsOptions {
  pool: Pool;
  flags: LiveFlags;
  tenant: string;
  roles: readonly string[];
  /** Roles whose handlers delegate (BUS_ROUTED). */
  delegatingRoles: readonly string[];
  /** Switch on A2A_EGRESS_ENABLED (global and for the tenant): the workflow has a foreign hop. @defaultValue false */
  egress?: boolean;
  /** Switch on REPLY_ENABLED (global and for the tenant): the workflow replies to its origin. @defaultValue false */
  reply?: boolean;
  actor: string;
}

type Switch = [FlagName, ScopeKind, string];

/** Switches on what is off; returns the line to print. */
export async function switchOnDemoFlags(options: DemoFlagsOptions): Promise<string> {
  const wanted: Switch[] = [
    ["BUS_ENABLED", "global", ""],
    ["COORDINATOR_ENABLED", "global", ""],
    ["COORDINATOR_ENABLED", "tenant", options.tenant],
    ["HARNESS_ENABLED", "global", ""],
    ...options.roles.map((role): Switch => ["HARNESS_ENABLED", "role", role]),
    ...options.delegatingRoles.map((role): Switch => ["BUS_ROUTED", "role", role]),
    ...(options.egress ? ([["A2A_EGRESS_ENABLED", "global", ""], ["A2A_EGRESS_ENABLED", "tenant", options.tenant]] satisfies Switch[]) : []),
    ...(options.reply ? ([["REPLY_ENABLED", "global", ""], ["REPLY_ENABLED", "tenant", options.tenant]] satisfies Switch[]) : []),
  ];
  const off = wanted.filter(([name, kind, scope]) => !options.flags.value(name, kind, scope));
  if (off.length === 0) return `flags already on: ${summarise(wanted)}`;
  for (const [name, scopeKind, scope] of off) {
    await setFlag(createPostgresFlagStore(), options.pool, { name, scopeKind, scope, enabled: true, actor: options.actor, reason: "switched on by the demo for its run" });
  }
  // Apply now rather than at the next poll, so the first hop does not wait for it.
  await options.flags.refresh();
  return `switching on ${summarise(off)} — audited as actor "${options.actor}"; they stay on`;
}

/** `BUS_ENABLED, HARNESS_ENABLED (global, role:writer)` */
function summarise(switches: readonly Switch[]): string {
  const byName = new Map<FlagName, string[]>();
  for (const [name, kind, scope] of switches) byName.set(name, [...(byName.get(name) ?? []), describeScope(kind, scope)]);
  return [...byName].map(([name, scopes]) => (scopes.length === 1 && scopes[0] === "global" ? name : `${name} (${scopes.join(", ")})`)).join(", ");
}
