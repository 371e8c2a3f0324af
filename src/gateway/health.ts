/**
 * `/healthz`: the process is up and serving HTTP (no dependencies checked — a liveness probe must not restart a
 * healthy gateway because Postgres blinked). `/readyz`: see src/process/readiness.ts; 200 when Redis, Postgres and the
 * schema are fine, 503 naming each that is not.
 */
import type { ServerResponse } from "node:http";
export { readiness, type ReadinessDeps, type ReadinessReport } from "../process/readiness.js";

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
