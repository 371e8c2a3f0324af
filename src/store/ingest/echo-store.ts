/**
 * The storage port of echo suppression (ingest/echo.ts says what counts as our own reply): `origin_replies` and
 * `connections` read for many deliveries at once. The Postgres adapter is postgres-echo-store.ts beside this file.
 */
import type { EchoProbe } from "../../ingest/echo-probe.js";
import type { Queryable } from "../db.js";

export interface EchoStore {
  /**
   * Which of `items` are our own replies, in order, in one round trip whatever their number: by provider id (a
   * `sent` reply through a connection of the probe's account), by text (a reply to the same address, `dialing`,
   * `sent` or `unknown`, created in the last `textWindowMinutes`), or by Slack bot or app.
   */
  selfReplies(db: Queryable, items: ReadonlyArray<{ orgId: string; probe: EchoProbe }>, textWindowMinutes: number): Promise<boolean[]>;
}
