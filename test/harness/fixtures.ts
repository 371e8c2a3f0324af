/**
 * Shared by the harness tests: a real Redis bus under a unique prefix, envelope builders playing the
 * coordinator's part, and a reader of what the harness sent to the coordinator stream.
 */
import { randomUUID } from "node:crypto";
import { COORDINATOR_STREAM, type Bus } from "../../src/bus/bus.js";
import {
  COORDINATOR_ENDPOINT,
  EndpointKind,
  EnvelopeKind,
  ResultStatus,
  createEnvelope,
  jsonPayload,
  readJsonPayload,
  type Envelope,
} from "../../src/bus/codec.js";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { createHarness, HARNESS_GROUP, type Harness, type HarnessOptions } from "../../src/harness/harness.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";
import { testBusAuth } from "../support/bus-auth.js";

export const MAX_PAYLOAD_BYTES = 64 * 1024;
const OBSERVER_GROUP = "observer";

export interface BusFixture extends TestRedis {
  bus: Bus;
  /** Every harness created through `harness()` is closed by `cleanup()`. */
  harness(options: Partial<HarnessOptions> & Pick<HarnessOptions, "handler">): Harness;
  /** Reads what the harness sent to the coordinator until `count` envelopes arrived (or the timeout). */
  sent(count: number, timeoutMs?: number): Promise<Envelope[]>;
  publish(stream: string, envelope: Envelope): Promise<void>;
  cleanup(): Promise<void>;
}

export async function createBusFixture(): Promise<BusFixture> {
  const redis = await createTestRedis();
  const bus = createRedisBus({ redis: redis.redis, keyPrefix: redis.prefix, maxPayloadBytes: MAX_PAYLOAD_BYTES, maxDeliveries: 5 });
  await bus.ensureGroup(COORDINATOR_STREAM, OBSERVER_GROUP);
  const harnesses: Harness[] = [];
  const seen: Envelope[] = [];
  return {
    ...redis,
    bus,
    harness(options) {
      const harness = createHarness({
        bus,
        role: "writer",
        signer: testBusAuth(MAX_PAYLOAD_BYTES).signer(`${options.team !== undefined ? "team" : "role"}:${options.team ?? options.role ?? "writer"}`),
        maxPayloadBytes: MAX_PAYLOAD_BYTES,
        reclaimIdleMs: 30_000,
        heartbeatMs: 1_000,
        shutdownGraceMs: 2_000,
        blockMs: 100,
        ...options,
      });
      harnesses.push(harness);
      return harness;
    },
    async sent(count, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      while (seen.length < count && Date.now() < deadline) {
        const entries = await bus.read({ stream: COORDINATOR_STREAM, group: OBSERVER_GROUP, consumer: "observer", count: 100, blockMs: 50 });
        seen.push(...entries.map((e) => e.envelope));
      }
      return [...seen];
    },
    publish: (stream, envelope) => bus.publish([{ stream, envelope }]),
    async cleanup() {
      await Promise.all(harnesses.map((h) => h.close()));
      await bus.close();
      await redis.cleanup();
    },
  };
}

export interface WorkFields {
  orgId?: string;
  taskId?: string;
  stepId?: string;
  attempt?: number;
  depth?: number;
  input?: unknown;
  /** The coordinator's turn number in the payload. @defaultValue 2 for WORK, 3 for REPLY */
  turn?: number;
  /** WORK only: the whole payload JSON instead of `{ input, turn }` (e.g. to send one the harness cannot read). */
  payload?: unknown;
}

export function workEnvelope(fields: WorkFields = {}): Envelope {
  return createEnvelope({
    id: randomUUID(),
    orgId: fields.orgId ?? "org-a",
    taskId: fields.taskId ?? randomUUID(),
    stepId: fields.stepId ?? "draft",
    kind: EnvelopeKind.WORK,
    source: { ...COORDINATOR_ENDPOINT },
    destination: { kind: EndpointKind.ROLE, id: "writer" },
    attempt: fields.attempt ?? 1,
    clearanceFloor: 2,
    delegationDepth: fields.depth ?? 0,
    payload: jsonPayload(fields.payload ?? { input: fields.input ?? { task: { topic: "tides" }, steps: {} }, turn: fields.turn ?? 2 }),
    // As a coordinator stamps it (bus/turn-marks.ts).
    turn: fields.turn ?? 2,
    trace: { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "sy=1" },
    createdAtMs: BigInt(Date.now()),
  });
}

export interface ReplyFields extends WorkFields {
  status?: "ok" | "error";
  correlationId?: string;
  sourceStepId?: string;
  resultRef?: string;
  state?: unknown;
  originDepth?: number;
  error?: { code: string; message: string };
  /** Put in the payload as `outstanding` as given (absent when undefined), to test how odd values are read. */
  outstanding?: unknown;
  /** The delegate's output carried in the payload as `result`, as a coordinator does when it fits (absent when undefined). */
  result?: unknown;
}

export function replyEnvelope(fields: ReplyFields = {}): Envelope {
  const taskId = fields.taskId ?? randomUUID();
  const sourceStepId = fields.sourceStepId ?? "draft.d1";
  const originDepth = fields.originDepth ?? 0;
  return createEnvelope({
    id: randomUUID(),
    orgId: fields.orgId ?? "org-a",
    taskId,
    stepId: fields.stepId ?? "draft",
    kind: EnvelopeKind.REPLY,
    source: { ...COORDINATOR_ENDPOINT },
    destination: { kind: EndpointKind.ROLE, id: "writer" },
    attempt: fields.attempt ?? 1,
    correlationId: fields.correlationId ?? "corr-1",
    delegationDepth: originDepth + 1,
    status: fields.status === "error" ? ResultStatus.ERROR : ResultStatus.OK,
    ...(fields.error ? { error: { code: fields.error.code, message: fields.error.message, retryable: false } } : {}),
    sourceStepId,
    resultRef: fields.resultRef ?? `step:${taskId}/${sourceStepId}`,
    payload: jsonPayload({
      input: fields.input ?? { topic: "tides" },
      state: fields.state ?? null,
      depth: originDepth,
      turn: fields.turn ?? 3,
      ...(fields.outstanding !== undefined ? { outstanding: fields.outstanding } : {}),
      ...(fields.result !== undefined ? { result: fields.result } : {}),
    }),
    turn: fields.turn ?? 3,
    createdAtMs: BigInt(Date.now()),
  });
}

/**
 * Runs a harness until `incoming` has been handled: returns the one envelope it sent to the coordinator, after the
 * entry was acknowledged.
 */
export async function runOne(fx: BusFixture, incoming: Envelope, options: Partial<HarnessOptions> & Pick<HarnessOptions, "handler">): Promise<Envelope> {
  const harness = fx.harness(options);
  const running = harness.start();
  const before = (await fx.sent(0)).length;
  await fx.publish("role:writer", incoming);
  const sent = (await fx.sent(before + 1))[before];
  await waitFor(async () => (await fx.bus.stats("role:writer", HARNESS_GROUP)).pending === 0, 5_000, "the entry to be acked");
  await harness.close();
  await running;
  if (!sent) throw new Error("nothing was sent to the coordinator");
  return sent;
}

export function json(envelope: Envelope): unknown {
  return readJsonPayload(envelope);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A resolvable promise, for handlers that wait on the test. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
