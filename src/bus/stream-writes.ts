/**
 * The Redis bus adapter's writes of envelopes and acknowledgements: XADD (pipelined), XACK, and a harness turn's
 * RESULT with the XACK of its WORK in one round trip (`lua/publish-ack.ts`).
 */
import type { Redis } from "ioredis";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Logger } from "../logger.js";
import { hashTagOf } from "./keys.js";
import { ENVELOPE_FIELD } from "./lua/fields.js";
import { publishAckScript } from "./lua/publish-ack.js";
import { runScript } from "./lua/script.js";
import { hasErrorPrefix } from "./redis-replies.js";

/** An encoded envelope and the Redis key of its stream. */
export type EncodedEntry = [key: string, bytes: Buffer];

/** Entries to acknowledge: `stream` is the logical name (for logs), `key` its Redis key. */
export interface AckKeys {
  stream: string;
  key: string;
  group: string;
  ids: readonly string[];
}

export interface StreamWrites {
  append(encoded: readonly EncodedEntry[]): Promise<void>;
  /** XACK; a consumer group that no longer exists is logged, not thrown (there is nothing left to acknowledge). */
  acknowledge(target: AckKeys): Promise<void>;
  /**
   * `append`, then `acknowledge` only if every append succeeded. A rejection whose `details.published` is true
   * means the envelopes are out and only the acknowledgement failed.
   */
  appendThenAcknowledge(encoded: readonly EncodedEntry[], target: AckKeys): Promise<void>;
}

export function createStreamWrites(redis: Redis, logger: Logger): StreamWrites {
  async function append(encoded: readonly EncodedEntry[]): Promise<void> {
    if (encoded.length === 0) return;
    if (encoded.length === 1) {
      await redis.xadd(encoded[0]![0], "*", ENVELOPE_FIELD, encoded[0]![1]);
      return;
    }
    const pipeline = redis.pipeline();
    for (const [key, bytes] of encoded) pipeline.xadd(key, "*", ENVELOPE_FIELD, bytes);
    const results = (await pipeline.exec()) ?? [];
    const failures = results.filter(([error]) => error);
    if (failures.length > 0 || results.length !== encoded.length) {
      // Earlier entries may be on their streams; at-least-once delivery and dedupe by envelope id cover a retry.
      throw new SwitchyardError(ErrorCode.Unavailable, `bus publish: ${failures.length} of ${encoded.length} XADDs failed: ${failures[0]?.[0]?.message ?? "no reply"}`, {
        cause: failures[0]?.[0],
        details: { failed: failures.length, total: encoded.length },
      });
    }
  }

  async function acknowledge({ stream, key, group, ids }: AckKeys): Promise<void> {
    if (ids.length === 0) return;
    try {
      await redis.xack(key, group, ...ids);
    } catch (error) {
      if (!hasErrorPrefix(error, "NOGROUP")) throw error;
      groupGone({ stream, group, ids });
    }
  }

  function groupGone({ stream, group, ids }: Pick<AckKeys, "stream" | "group" | "ids">): void {
    logger.warn({ stream, group, count: ids.length }, "ack for a consumer group that no longer exists; nothing to acknowledge");
  }

  /** One script may touch these keys: always on a single Redis; on a Cluster only when they share a hash tag. */
  function oneScriptReaches(keys: readonly string[]): boolean {
    if (!(redis as { isCluster?: boolean }).isCluster) return true;
    const tag = hashTagOf(keys[0]!);
    return keys.every((key) => hashTagOf(key) === tag);
  }

  async function appendThenAcknowledge(encoded: readonly EncodedEntry[], target: AckKeys): Promise<void> {
    const keys = [...encoded.map(([key]) => key), target.key];
    if (encoded.length === 0 || target.ids.length === 0 || !oneScriptReaches(keys)) {
      // In order, each awaited: on a Cluster the two run on different nodes, so nothing else would keep the order.
      await append(encoded);
      await acknowledge(target).catch((error: unknown) => {
        throw ackFailedAfterPublish(error);
      });
      return;
    }
    const args = [encoded.length, ...encoded.map(([, bytes]) => bytes), target.group, ...target.ids];
    const acked = await runScript(redis, publishAckScript(keys.length), keys, args);
    if (acked === -1) groupGone(target);
    if (typeof acked === "string") throw ackFailedAfterPublish(new Error(acked));
  }

  return { append, acknowledge, appendThenAcknowledge };
}

function ackFailedAfterPublish(cause: unknown): SwitchyardError {
  const message = cause instanceof Error ? cause.message : String(cause);
  return new SwitchyardError(ErrorCode.Unavailable, `bus publishAndAck: published, but the ack failed: ${message}`, { cause, details: { published: true } });
}
