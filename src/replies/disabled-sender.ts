/**
 * The reply sender of a runtime with no SWITCHYARD_SECRET_ENCRYPTION_KEY: no connection secret can be opened, so it
 * dials nothing and changes no row. When pending replies exist it says once why they wait (a key configured later
 * sends them, as long as they are still pending).
 */
import { ENCRYPTION_KEY_VARIABLE } from "../vault/secret-cipher.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Queryable } from "../store/db.js";
import type { ReplyDialStore } from "../store/replies/reply-store.js";
import type { ReplySender } from "./reply-sender.js";

export function createDisabledReplySender(options: { pool: Queryable; store: Pick<ReplyDialStore, "anyPending">; logger?: Logger; intervalMs?: number }): ReplySender {
  const logger = (options.logger ?? silentLogger).child({ component: "reply-sender" });
  let warned = false;
  const runOnce = async (): Promise<number> => {
    if (warned) return 0;
    if (await options.store.anyPending(options.pool)) {
      warned = true;
      logger.warn(`origin replies are pending but none can be sent: replies need ${ENCRYPTION_KEY_VARIABLE} (the connections' secrets are sealed with it)`);
    }
    return 0;
  };
  return {
    kick() {},
    runOnce,
    sweep: async () => 0,
    job: { name: "origin-replies", intervalMs: options.intervalMs ?? 5_000, run: runOnce },
    close: async () => {},
  };
}
