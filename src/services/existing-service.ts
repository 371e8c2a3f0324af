/**
 * The adapter for a server this process did not start: an explicit REDIS_URL / DATABASE_URL, or a local server
 * answering on the default address. Nothing to stop.
 */
import type { LocalService, ServiceName } from "./local-service.js";

export function existingService(service: ServiceName, url: string, description: string): LocalService {
  return { service, url, description, embedded: false, owned: false, stop: async () => {} };
}

/** "127.0.0.1:5432" from a connection URL (no credentials, no path: safe to print). */
export function hostPort(url: string, defaultPort: number): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || defaultPort}`;
}
