/**
 * Structured JSON logging (pino). A logger is created once per process and passed down; parts scope it with
 * `logger.child({ orgId, taskId, stepId, envelopeId })` so every line carries the ids it is about.
 */
import { pino, type Logger } from "pino";

export type { Logger };

export function createLogger(options: { level?: string; name?: string; destination?: NodeJS.WritableStream } = {}): Logger {
  const opts = { level: options.level ?? "info", name: options.name ?? "switchyard", base: { pid: process.pid } };
  return options.destination ? pino(opts, options.destination as never) : pino(opts);
}

/** A logger that drops everything, for tests and library callers that pass none. */
export const silentLogger: Logger = pino({ level: "silent" });
