/**
 * Prefilled inboxes for the drain scenarios ((b) governed-hops, (g) scale-out): every WORK waiting on `role:echo`
 * turned into the RESULT a no-op harness would send, signed as that harness, bound for an inbox of the caller's
 * choice (the shared inbox, or each tenant's shard inbox). The WORK stream is emptied.
 */
import { decodeEnvelope, EndpointKind } from "../../src/bus/codec.js";
import { streamKey } from "../../src/bus/keys.js";
import { resultOkEnvelope, workFromEnvelope } from "../../src/harness/envelopes.js";
import type { BenchSystem } from "./system.js";

const PREFILL_CHUNK = 1_000;
const NULL_PAYLOAD = { data: new TextEncoder().encode("null"), contentType: "application/json" };

export interface PreparedResults {
  count: number;
  /** Writes the RESULTs to their inboxes. */
  publish(): Promise<void>;
}

/** Builds the RESULTs for every WORK on `role:echo` (publishing is the caller's move), and empties that stream. */
export async function prepareResults(system: BenchSystem, inboxOf: (orgId: string) => string): Promise<PreparedResults> {
  const { redis, bus } = system.runtime;
  const workKey = streamKey(system.config.bus.keyPrefix, "role:echo");
  const entries = await redis.xrangeBuffer(workKey, "-", "+");
  const source = { kind: EndpointKind.ROLE, id: "echo" } as const;
  const signer = system.runtime.busAuth.signer("role:echo");
  const results = entries.map(([, fields]) => {
    const work = decodeEnvelope(fields[1]!, system.config.bus.maxPayloadBytes);
    // Echo the WORK's turn as a harness does, so the coordinator takes the RESULT as this turn's outcome.
    const envelope = resultOkEnvelope(work, source, NULL_PAYLOAD, { cost: 0, inputTokens: 0, outputTokens: 0, durationMs: 0 }, workFromEnvelope(work).turn, Date.now());
    // Signed as the harness of role:echo would (the coordinator refuses anything else); signing is prefill time.
    return { stream: inboxOf(work.orgId), data: signer.sign(envelope) };
  });
  await redis.unlink(workKey);
  return {
    count: results.length,
    async publish() {
      for (let i = 0; i < results.length; i += PREFILL_CHUNK) await bus.publishEncoded(results.slice(i, i + PREFILL_CHUNK));
    },
  };
}
