/**
 * Pieces every demo narrates the same way: the database step, and indented blocks (tables) under a step.
 */
import { migrate } from "../../store/migrate.js";
import type { TaskView } from "../../tasks/tasks.js";
import { formatStepLine, watchTask, type WatchTaskOptions } from "../../cli/task-watch.js";

/** Step 1 of every demo: create the database if missing and apply the migrations, saying what happened. */
export async function prepareDemoDatabase(databaseUrl: string, say: (line: string) => void): Promise<void> {
  say("1. Preparing the database (created if missing, migrations applied)");
  const migrated = await migrate({ connectionString: databaseUrl, createDatabase: true });
  say(`   ${migrated.applied.length > 0 ? `applied ${migrated.applied.join(", ")}` : "already up to date"}; schema version ${migrated.version}`);
}

export function indent(text: string, spaces = 3): string {
  const pad = " ".repeat(spaces);
  return text
    .split("\n")
    .map((line) => pad + line)
    .join("\n");
}

/**
 * Watches a demo's task to its end, a line per step change. Hops take milliseconds here: a fast poll lets a
 * newcomer see most intermediate states, not just the ends.
 */
export function watchNarrated(
  options: Pick<WatchTaskOptions, "tasks" | "orgId" | "taskId" | "signal" | "onChange"> & { timeoutMs: number | undefined },
  say: (line: string) => void,
): Promise<TaskView> {
  return watchTask({
    ...options,
    ...(options.signal ? { signal: options.signal } : {}),
    intervalMs: 50,
    onStep: (step) => say(`   ${formatStepLine(step)}`),
  });
}
