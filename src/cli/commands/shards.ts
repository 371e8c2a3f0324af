/**
 * `switchyard shards [--json]` — which coordinator owns which tenant shard now (issue 11): the live coordinators,
 * and each shard's owner, fencing token and lease expiry. `--tenant T` names the shard (and owner) of one tenant.
 *
 * Through AdminService.ListShards (remote/admin-api.ts), run in-process in direct mode.
 */
import type { Command } from "commander";
import type { ActionRunner } from "../action.js";
import { formatTable, formatTime } from "../output.js";
import { withAdminApi } from "../remote/admin-api.js";

export function registerShardsCommands(program: Command, run: ActionRunner): void {
  /**
   * Human output: one line per live coordinator with its shard count, then the table of shards.
   * JSON: `{"shardCount","members":[{coordinatorId,host,pid,joinedAt,expiresAt,shards}],"leases":[{shard,owner,token,expiresAt,live}]}`
   */
  program
    .command("shards")
    .description("show which coordinator owns which tenant shard")
    .option("--tenant <tenant>", "only the shard of this tenant")
    .option("--json", "print as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; json?: boolean }) => {
        const { shardCount: count, members, leases, tenantShard: wanted } = await withAdminApi(ctx, (api) => api.listShards(options.tenant === undefined ? {} : { orgId: options.tenant }));
        const shown = wanted === undefined ? leases : leases.filter((lease) => lease.shard === wanted);
        const owned = (id: string) => leases.filter((lease) => lease.live && lease.owner === id).length;
        if (options.json) {
          return ctx.printJson({
            shardCount: count,
            ...(options.tenant === undefined ? {} : { tenant: options.tenant, shard: wanted }),
            members: members.map((m) => ({ ...m, joinedAt: new Date(m.joinedAtMs).toISOString(), expiresAt: new Date(m.expiresAtMs).toISOString(), shards: owned(m.coordinatorId) })),
            leases: shown.map((l) => ({ shard: l.shard, owner: l.live ? l.owner : null, token: l.token, expiresAt: l.live ? new Date(l.expiresAtMs).toISOString() : null, live: l.live })),
          });
        }
        if (members.length === 0) ctx.note("no coordinator is running (none renewed its membership within its lease)");
        for (const m of members) ctx.print(`coordinator ${m.coordinatorId} (${m.host}, pid ${m.pid}): ${owned(m.coordinatorId)} of ${count} shards`);
        if (options.tenant !== undefined) ctx.print(`tenant ${options.tenant} is in shard ${wanted}`);
        ctx.print(
          formatTable(
            ["shard", "owner", "token", "lease until"],
            shown.map((l) => [String(l.shard), l.live ? l.owner : "(none)", String(l.token), l.live ? formatTime(new Date(l.expiresAtMs).toISOString()) : null]),
          ),
        );
        const unowned = leases.filter((l) => !l.live).length;
        if (unowned > 0 && options.tenant === undefined) ctx.note(`${unowned} shard(s) have no owner now: their tenants' envelopes wait on their inboxes until a coordinator takes them`);
      }),
    );
}
