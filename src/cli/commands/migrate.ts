/**
 * `switchyard migrate` — creates the database if missing and applies pending migrations.
 */
import type { Command } from "commander";
import type { ActionRunner } from "../action.js";

export function registerMigrateCommand(program: Command, run: ActionRunner): void {
  /**
   * `migrate [--json]` — creates the database named in DATABASE_URL when it does not exist, then applies the
   * pending migrations in order under an advisory lock (concurrent runs serialise). A database whose schema is
   * newer than this build is refused (SCHEMA_TOO_NEW, exit 1). Human output: one `applied NAME` line per
   * migration, then the schema version.
   *
   * JSON: `{"applied":["0001_core"],"version":1}`
   */
  program
    .command("migrate")
    .description("create the database if needed and apply pending migrations")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { json?: boolean }) => {
        const [{ migrate }, { whenAnswering }] = await Promise.all([import("../../store/migrate.js"), import("../../process/service-endpoints.js")]);
        const result = await whenAnswering(ctx.endpoints.postgres, () => migrate({ connectionString: ctx.config.databaseUrl, createDatabase: true }));
        if (options.json) return ctx.printJson(result);
        for (const name of result.applied) ctx.print(`applied ${name}`);
        ctx.print(result.applied.length > 0 ? `database at schema version ${result.version}` : `already up to date at schema version ${result.version}`);
      }),
    );
}
