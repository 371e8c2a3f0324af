/**
 * Echo suppression: a reply we posted comes back as a webhook, and must not become new work (a loop that would
 * post again). A delivery is our own reply when, for the endpoint's tenant (another tenant's rows say nothing):
 * - its comment id (GitHub / Gitea `comment.id`, Cairn `data.comment.id`) or Slack message `event.ts` is the
 *   provider id of one of our `sent` replies made through a connection of the SAME kind and account (forge host,
 *   Slack team, Cairn base URL): ids are only unique per account, and a self-hosted forge's small sequential ids
 *   would otherwise make a human's comment N on forge B look like our reply N on forge A;
 * - or its words hash to the `text_sha256` of one of our replies to the SAME address (`address_display`) in state
 *   `dialing`, `sent` or `unknown`, made within the last 15 minutes: the webhook can arrive before the sender has
 *   recorded the provider id (or after a crash left the row `unknown`), and starting a task then would reply again;
 * - or (Slack) `event.bot_id` / `event.app_id` is the bot or app of one of the tenant's Slack connections (learnt by
 *   the reply sender from its own posts).
 *
 * `echoProbe` (echo-probe.ts) is pure (what to look for); `EchoChecker` asks the database, through the echo port
 * (store/ingest/echo-store.ts), for many concurrent deliveries in one query (a burst of comments costs one round
 * trip, not one pool connection each).
 */
import type { Queryable } from "../store/db.js";
import { MicroBatcher } from "../store/micro-batcher.js";
import type { EchoStore } from "../store/ingest/echo-store.js";
import type { EchoProbe } from "./echo-probe.js";

export { echoProbe, type EchoProbe } from "./echo-probe.js";

/** How long after we created a reply an identical comment at its address counts as its echo. */
export const ECHO_TEXT_WINDOW_MINUTES = 15;

/** Which of `items` are our own replies: one query whatever the number of items. */
export function selfReplies(db: Queryable, items: ReadonlyArray<{ orgId: string; probe: EchoProbe }>, store: EchoStore): Promise<boolean[]> {
  return store.selfReplies(db, items, ECHO_TEXT_WINDOW_MINUTES);
}

export async function isSelfReply(db: Queryable, orgId: string, probe: EchoProbe, store: EchoStore): Promise<boolean> {
  return (await selfReplies(db, [{ orgId, probe }], store))[0]!;
}

/** `isSelfReply` for many deliveries at once, grouped by a MicroBatcher; one per process. */
export class EchoChecker {
  private readonly batcher: MicroBatcher<{ orgId: string; probe: EchoProbe }, boolean>;

  /** `options.store`: how the replies are read (`stores.echoes`). */
  constructor(private readonly db: Queryable, options: { store: EchoStore; maxBatch?: number; maxInFlight?: number }) {
    const { store } = options;
    this.batcher = new MicroBatcher({ run: (items) => selfReplies(this.db, items, store), maxBatch: options.maxBatch ?? 200, maxInFlight: options.maxInFlight ?? 2 });
  }

  isSelfReply(orgId: string, probe: EchoProbe): Promise<boolean> {
    return this.batcher.submit({ orgId, probe });
  }
}
