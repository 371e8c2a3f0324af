/**
 * Flag values at one moment: the environment's defaults with the stored rows on top. Pure — no I/O, no clock —
 * so `LiveFlags` can swap a whole snapshot in one assignment and every reader sees a consistent set.
 *
 * value(name, scope) = the stored row for exactly that name and scope, else the environment default.
 * A scoped switch is on when the flag's global value AND the scope's value are on (the global value is the
 * master switch). BUS_ROUTED has no global value: its role/team value alone decides.
 */
import type { FlagsConfig, ScopeList } from "../config/index.js";
import { FLAG_NAMES, FLAG_SCOPES, type FlagName, type FlagRow, type FlagSwitches, type ScopeKind, type TenantSelection } from "./flag-types.js";

/** One line of a flag listing: a stored row or an environment default, with what is in force. */
export interface FlagView {
  name: FlagName;
  scopeKind: ScopeKind;
  /** "" for global; `*` for an environment default that covers every tenant / queue. */
  scope: string;
  /** This scope's own value. */
  enabled: boolean;
  /** What is in force: the value combined with the flag's global master switch. */
  effective: boolean;
  source: "table" | "env";
  updatedBy?: string;
  reason?: string;
  updatedAt?: string;
}

function key(name: FlagName, scopeKind: ScopeKind, scope: string): string {
  return `${name}\u0000${scopeKind}\u0000${scope}`;
}

function listed(list: ScopeList, item: string): boolean {
  return list === "*" || list.includes(item);
}

export class FlagValues implements FlagSwitches {
  private readonly stored = new Map<string, FlagRow>();

  constructor(
    readonly defaults: FlagsConfig,
    readonly rows: readonly FlagRow[],
  ) {
    for (const row of rows) this.stored.set(key(row.name, row.scopeKind, row.scope), row);
  }

  /** The environment's default for one name and scope. */
  defaultValue(name: FlagName, scopeKind: ScopeKind, scope = ""): boolean {
    const d = this.defaults;
    const queue = `${scopeKind}:${scope}`;
    const isQueue = scopeKind === "role" || scopeKind === "team";
    switch (name) {
      case "BUS_ENABLED":
        return scopeKind === "global" && d.busEnabled;
      case "COORDINATOR_ENABLED":
        return scopeKind === "global" ? d.coordinatorEnabled : scopeKind === "tenant" && listed(d.coordinatorTenants, scope);
      case "HARNESS_ENABLED":
        return scopeKind === "global" ? d.harnessEnabled : isQueue && listed(d.harnessScopes, queue);
      case "BUS_ROUTED":
        return isQueue && listed(d.busRouted, queue);
      case "A2A_EGRESS_ENABLED":
        return scopeKind === "global" ? d.egressEnabled : scopeKind === "tenant" && listed(d.egressTenants, scope);
      case "REPLY_ENABLED":
        return scopeKind === "global" ? d.replyEnabled : scopeKind === "tenant" && listed(d.replyTenants, scope);
    }
  }

  /** One scope's own value: its stored row, else the default. */
  value(name: FlagName, scopeKind: ScopeKind, scope = ""): boolean {
    return this.stored.get(key(name, scopeKind, scope))?.enabled ?? this.defaultValue(name, scopeKind, scope);
  }

  busEnabled(): boolean {
    return this.value("BUS_ENABLED", "global");
  }

  coordinatorEnabled(orgId: string): boolean {
    return this.value("COORDINATOR_ENABLED", "global") && this.value("COORDINATOR_ENABLED", "tenant", orgId);
  }

  coordinatorTenants(): TenantSelection {
    if (!this.value("COORDINATOR_ENABLED", "global")) return { only: [] };
    const on: string[] = [];
    const off: string[] = [];
    for (const row of this.rows) {
      if (row.name === "COORDINATOR_ENABLED" && row.scopeKind === "tenant") (row.enabled ? on : off).push(row.scope);
    }
    const envList = this.defaults.coordinatorTenants;
    if (envList === "*") return { except: off };
    return { only: [...new Set([...envList, ...on])].filter((tenant) => !off.includes(tenant)) };
  }

  harnessEnabled(kind: "role" | "team", name: string): boolean {
    return this.value("HARNESS_ENABLED", "global") && this.value("HARNESS_ENABLED", kind, name);
  }

  busRouted(kind: "role" | "team", name: string): boolean {
    return this.value("BUS_ROUTED", kind, name);
  }

  egressEnabled(orgId: string): boolean {
    return this.value("A2A_EGRESS_ENABLED", "global") && this.value("A2A_EGRESS_ENABLED", "tenant", orgId);
  }

  replyEnabled(orgId: string): boolean {
    return this.value("REPLY_ENABLED", "global") && this.value("REPLY_ENABLED", "tenant", orgId);
  }

  /** Every global value, every scope the environment names, and every stored row. */
  describe(): FlagView[] {
    const views = new Map<string, FlagView>();
    const globalOn = (name: FlagName): boolean => !FLAG_SCOPES[name].includes("global") || this.value(name, "global");
    const add = (view: Omit<FlagView, "effective">): void => {
      const effective = view.scopeKind === "global" ? view.enabled : view.enabled && globalOn(view.name);
      views.set(key(view.name, view.scopeKind, view.scope), { ...view, effective });
    };
    for (const name of FLAG_NAMES) {
      if (FLAG_SCOPES[name].includes("global")) add({ name, scopeKind: "global", scope: "", enabled: this.defaultValue(name, "global"), source: "env" });
    }
    const d = this.defaults;
    const envScopes: Array<[FlagName, ScopeList]> = [
      ["COORDINATOR_ENABLED", d.coordinatorTenants],
      ["HARNESS_ENABLED", d.harnessScopes],
      ["BUS_ROUTED", d.busRouted],
      ["A2A_EGRESS_ENABLED", d.egressTenants],
      ["REPLY_ENABLED", d.replyTenants],
    ];
    for (const [name, list] of envScopes) {
      const tenantScoped = FLAG_SCOPES[name].includes("tenant");
      if (list === "*") {
        add({ name, scopeKind: tenantScoped ? "tenant" : "role", scope: "*", enabled: true, source: "env" });
        if (!tenantScoped) add({ name, scopeKind: "team", scope: "*", enabled: true, source: "env" });
        continue;
      }
      for (const item of list) {
        if (tenantScoped) add({ name, scopeKind: "tenant", scope: item, enabled: true, source: "env" });
        else {
          const [kind, ...rest] = item.split(":");
          add({ name, scopeKind: kind as ScopeKind, scope: rest.join(":"), enabled: true, source: "env" });
        }
      }
    }
    for (const row of this.rows) add({ ...row, source: "table" });
    const order = (v: FlagView) => `${FLAG_NAMES.indexOf(v.name)}\u0000${v.scopeKind === "global" ? "" : v.scopeKind}\u0000${v.scope}`;
    return [...views.values()].sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  }
}
