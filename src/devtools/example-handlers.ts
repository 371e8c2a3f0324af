/**
 * The example roles `start all` and the demo serve, and where their handler modules are. A file of its own, with
 * no imports beyond Node's (and the package locator), because `start all --help` shows the roles and must not load the dev stack to do it.
 */
import { join } from "node:path";
import { assetPath } from "../package-paths.js";

/** Roles served by `examples/handlers/<role>.ts` (compiled: `dist/examples/handlers/<role>.js`). */
export const EXAMPLE_ROLES = ["researcher", "analyst", "writer", "publisher", "echo", "orchestrator", "critic"] as const;

export const EXAMPLE_HANDLERS_DIR = assetPath("examples/handlers/");

// Compiled (dist/, the bundle), the handlers beside this code are JavaScript; run through tsx it is the .ts source,
// and so are they. Plain Node cannot import a .ts handler, tsx can import either.
const HANDLER_EXTENSION = import.meta.url.endsWith(".ts") ? ".ts" : ".js";

export function exampleHandlerPath(role: string): string {
  return join(EXAMPLE_HANDLERS_DIR, `${role}${HANDLER_EXTENSION}`);
}
