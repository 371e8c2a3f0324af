import { loadConfig } from "../../src/config.js";
import { runScenarios } from "../support.js";
import { createBenchSystem } from "./system.js";
const config = loadConfig();
await runScenarios([{ name: "explain", description: "", budgetMs: { full: 120000, quick: 120000 }, async run(ctx) {
  const system = await createBenchSystem(ctx);
  const pool = system.runtime.pool;
  for (let r = 0; r < 3; r++) {
    const ids = await system.createTasks(20000);
    await system.startTasks(ids);
    const sample = ids.slice(5000, 5200); if (r === 1) await pool.query("ANALYZE");
    for (const q of [
      "EXPLAIN (ANALYZE, BUFFERS) SELECT task_id, step_id, org_id, kind, status, destination, attempt, depth, clearance, due_at_ms, cost, output, error, approval_id, delegation, checkpoint, delegations FROM steps WHERE task_id = ANY($1::uuid[])",
      "EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM tasks WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE",
    ]) {
      const { rows } = await pool.query(q, [sample]);
      console.log(rows.map((x: any) => x["QUERY PLAN"].slice(0,140)).join("\n"));
    }
    const st = await pool.query("select relname, n_live_tup, n_dead_tup, last_autoanalyze, last_autovacuum from pg_stat_user_tables where relname in ('steps','tasks','audit_log','processed_envelopes','outbox')");
    console.log(st.rows);
  }
  return [];
}}], { redisUrl: config.redisUrl, databaseUrl: config.databaseUrl, quick: false });
process.exit(0);
