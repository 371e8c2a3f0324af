/**
 * The port for the services a Switchyard process needs on this machine (PostgreSQL and Redis): either a server
 * that was already there (an explicit URL or something answering on the default address) or one this process
 * started for itself (issue 12 §5: a machine with Node and nothing else running). Adapters sit beside it:
 * `existing-service.ts`, `embedded-postgres.ts`, `redis-server.ts`; `resolve-local-services.ts` picks between them.
 */

export type ServiceName = "PostgreSQL" | "Redis";

export interface LocalService {
  readonly service: ServiceName;
  /** What the runtime connects to. */
  readonly url: string;
  /**
   * How it was provided, for the one line the demo prints after the service name, e.g. "embedded 15.18 on
   * 127.0.0.1:54329 (data in .switchyard/pg)" or "local server at 127.0.0.1:6379".
   */
  readonly description: string;
  /** True for a server of Switchyard's own (embedded PostgreSQL, redis-server in the data folder), ours to migrate. */
  readonly embedded: boolean;
  /** True when this process started it (or adopted one an earlier, dead process left running) and stops it. */
  readonly owned: boolean;
  /**
   * Stops the server when `owned` (graceful, then forced after a grace period); otherwise does nothing. Idempotent;
   * never throws: it runs in `finally` blocks on the way out.
   */
  stop(): Promise<void>;
}

/** "PostgreSQL: embedded 15.18 on 127.0.0.1:54329 (data in .switchyard/pg)". */
export function describeService(service: LocalService): string {
  return `${service.service}: ${service.description}`;
}
