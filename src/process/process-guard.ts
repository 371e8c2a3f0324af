/**
 * Last-resort handlers of the long-running processes (`start coordinator|harness|gateway|all`) for an error that
 * escaped every catch: an `uncaughtException` (e.g. an `error` event nobody listens to) or an `unhandledRejection`.
 *
 * - When the error says Postgres or Redis is unreachable, it is a stray connection error: it is recorded as an
 *   outage (logged once, counted) and the process carries on. Every part that needs the dependency retries on its
 *   own, and the connection pools replace broken connections, so nothing is left half-done by it.
 * - Anything else is a programming error: logged at fatal with its stack, then the process exits with status 70
 *   (EX_SOFTWARE) so its supervisor restarts it. Running on in an unknown state could break an invariant; a
 *   restart cannot (work is redelivered, transitions are guarded). This is Node's own default, made visible as a
 *   structured log line with a distinct exit status.
 */
import type { DependencyHealth } from "./dependency-health.js";
import type { Logger } from "../logger.js";

export const EXIT_SOFTWARE = 70;

export interface ProcessGuardOptions {
  logger: Logger;
  health: DependencyHealth;
  /** @defaultValue process.exit */
  exit?: (code: number) => void;
  /** @defaultValue the current process */
  target?: Pick<NodeJS.Process, "on" | "off">;
}

/** Installs the handlers; returns the function that removes them. */
export function installProcessGuards(options: ProcessGuardOptions): () => void {
  const target = options.target ?? process;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const handle = (kind: "uncaughtException" | "unhandledRejection") => (error: unknown) => {
    if (options.health.absorb(error)) {
      options.logger.debug({ err: error, kind }, "a stray dependency error reached the top level; carrying on");
      return;
    }
    options.logger.fatal({ err: error, kind }, "unexpected error (a bug); exiting so the supervisor restarts the process");
    exit(EXIT_SOFTWARE);
  };
  const onException = handle("uncaughtException");
  const onRejection = handle("unhandledRejection");
  target.on("uncaughtException", onException);
  target.on("unhandledRejection", onRejection);
  return () => {
    target.off("uncaughtException", onException);
    target.off("unhandledRejection", onRejection);
  };
}
