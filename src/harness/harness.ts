/**
 * The worker harness: consumes a role (or team) stream, runs the handler for each WORK and REPLY with an
 * AbortSignal, and sends the outcome (RESULT, or a QUERY when the handler delegates — to one destination or many —
 * or keeps waiting) to the coordinator. See `types.ts` for the handler surface, the resume signature of delegation
 * and fan-out.
 *
 * Lifecycle: `start()` reads until the harness is stopped (`close()` or the `signal` option), then drains:
 * in-flight turns get `shutdownGraceMs` to finish; the rest are abandoned (their signal aborted, their entries
 * left unacknowledged so another worker reclaims them) and `start()` resolves.
 */
import { sleep } from "../sleep.js";
import type { EnvelopeSigner } from "../bus/auth/bus-auth.js";
import { envelopeToBinary } from "../bus/envelope-wire.js";
import type { Bus, BusEntry } from "../bus/bus.js";
import { EndpointKind, EnvelopeKind } from "../bus/codec.js";
import { consumerName } from "../bus/keys.js";
import { DependencyHealth, outageBackoffMs } from "../process/dependency-health.js";
import { parseDestination } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { HarnessFlags } from "../flags/flag-types.js";
import { silentLogger, type Logger } from "../logger.js";
import { createHarnessRecorder, type HarnessMetrics, type TurnRecording } from "./harness-metrics.js";
import { screenEntries } from "./duplicates.js";
import { isHandledKind, type HarnessSource } from "./envelopes.js";
import type { ResultReader } from "./result-reader.js";
import type { TurnCheck } from "./turn-check.js";
import type { HarnessReplies } from "./turn.js";
import { startTurn, type RunningTurn, type TurnOutcome } from "./turn.js";
import type { AnyHandler } from "./types.js";

/** The consumer group every harness reads its stream with. */
export const HARNESS_GROUP = "harness";

/** With live flags, blocking reads are cut short this often so a flag change applies well within 2 s. */
const FLAG_READ_BLOCK_CAP_MS = 500;
/** How often a paused harness looks at its flags again. */
const PAUSE_CHECK_MS = 200;

export interface HarnessOptions {
  bus: Bus;
  /** The role queue to consume (`role:NAME`); exactly one of `role` and `team`. */
  role?: string;
  /** The team queue to consume (`team:NAME`); exactly one of `role` and `team`. */
  team?: string;
  /** Any `Handler<Input, Output>`; the harness hands it `work.input` as the coordinator sent it. */
  handler: AnyHandler;
  /**
   * Signs what the harness publishes to the coordinator (RESULT, QUERY, heartbeat) as its queue's identity:
   * `runtime.busAuth.signer("role:NAME")`. The coordinator refuses anything unsigned or signed as another queue.
   */
  signer: EnvelopeSigner;
  /** Handlers running at once. @defaultValue 10 */
  concurrency?: number;
  /** Aborting it stops the harness gracefully, like `close()`. */
  signal?: AbortSignal;
  /** @defaultValue a silent logger */
  logger?: Logger;
  /** Cap on an outgoing payload's JSON (handler output, delegation query + state). */
  maxPayloadBytes: number;
  /** Entries idle this long are taken over from their (presumed dead) consumer; checked every half of it. */
  reclaimIdleMs: number;
  /** How often a running turn's entry is touched so it is not reclaimed. */
  heartbeatMs: number;
  /** How long in-flight turns may run on after a stop before they are abandoned. */
  shutdownGraceMs: number;
  /** Lets handlers read delegate results (`ctx.readResult`); without one that call fails FAILED_PRECONDITION. */
  resultReader?: ResultReader;
  /** Lets handlers post origin replies (`ctx.reply`); without it that call fails FAILED_PRECONDITION. */
  replies?: HarnessReplies;
  /**
   * Asked before running a reclaimed entry: one whose turn already stood down (its outcome published, its worker
   * killed before the acknowledgement) is acknowledged without running the handler (outcome `stale`). Without it
   * every reclaimed entry runs, and the coordinator drops the stale outcome.
   */
  turnCheck?: TurnCheck;
  /** Longest a read blocks when the stream is empty. @defaultValue 1000 */
  blockMs?: number;
  /** Consumer name within the group; unique per process. @defaultValue `consumerName()` from bus/keys */
  consumer?: string;
  /**
   * Live flags. BUS_ENABLED or HARNESS_ENABLED off for this queue: no new work is read or reclaimed, turns in
   * flight finish. BUS_ROUTED off for this queue: `ctx.delegate()` and `ctx.delegateAll()` fail the turn with
   * BUS_NOT_ROUTED (`ctx.awaitMore()` asks nothing new, so it is still allowed).
   * @defaultValue everything on
   */
  flags?: HarnessFlags;
  /**
   * Where failures caused by an unreachable Redis or Postgres go: logged once per outage there, while the read
   * loop backs off (up to 5 s) instead of logging each failed read. @defaultValue one of its own
   */
  health?: DependencyHealth;
  /** Turns by outcome, their duration, in flight, read lag, heartbeats and reclaims (harness-metrics.ts). */
  metrics?: HarnessMetrics;
}

export interface HarnessStats {
  inFlight: number;
  completed: number;
  failed: number;
  delegated: number;
  /** Turns whose outcome could not be published; their entries stay pending. */
  unsent: number;
  /** Reclaimed entries acknowledged without running: their turn had already stood down (see `turnCheck`). */
  stale: number;
  /** Entries acknowledged without running: another entry carried the same envelope and took it first. */
  duplicate: number;
  abandoned: number;
  reclaimed: number;
  deadLettered: number;
  /** True while the flags keep this harness from taking new work. */
  paused: boolean;
}

export interface Harness {
  /** The logical stream consumed (`role:NAME` or `team:NAME`). */
  readonly stream: string;
  readonly consumer: string;
  /** Runs until stopped; resolves once in-flight turns finished or were abandoned. */
  start(): Promise<void>;
  /** Stops gracefully; resolves when `start()` has. Idempotent. */
  close(): Promise<void>;
  readonly stats: HarnessStats;
}

function positiveInt(value: number, name: string, min: number): number {
  if (!Number.isInteger(value) || value < min) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `harness option ${name} must be an integer >= ${min}, got ${value}`, {
      details: { path: name },
    });
  }
  return value;
}

function sourceOf(options: HarnessOptions): HarnessSource {
  const { role, team } = options;
  if ((role === undefined) === (team === undefined)) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, "a harness consumes exactly one of `role` or `team`", { details: { path: "role" } });
  }
  const text = role !== undefined ? `role:${role}` : `team:${team}`;
  const parsed = parseDestination(text);
  if (!parsed) throw new SwitchyardError(ErrorCode.InvalidArgument, `${JSON.stringify(text)} is not a valid queue name`, { details: { path: role !== undefined ? "role" : "team" } });
  return { kind: parsed.kind === "role" ? EndpointKind.ROLE : EndpointKind.TEAM, id: parsed.id };
}


export function createHarness(options: HarnessOptions): Harness {
  const source = sourceOf(options);
  const stream = `${source.kind === EndpointKind.ROLE ? "role" : "team"}:${source.id}`;
  const concurrency = positiveInt(options.concurrency ?? 10, "concurrency", 1);
  const maxPayloadBytes = positiveInt(options.maxPayloadBytes, "maxPayloadBytes", 1);
  const reclaimIdleMs = positiveInt(options.reclaimIdleMs, "reclaimIdleMs", 2);
  const heartbeatMs = positiveInt(options.heartbeatMs, "heartbeatMs", 1);
  if (heartbeatMs >= reclaimIdleMs) {
    // A running turn's entry would go idle past the reclaim threshold between touches, and another worker
    // (or this one's own reclaim, bumping the delivery count) would take it while it is still being worked on.
    throw new SwitchyardError(ErrorCode.InvalidArgument, `harness heartbeatMs (${heartbeatMs}) must be below reclaimIdleMs (${reclaimIdleMs})`, {
      details: { path: "heartbeatMs" },
    });
  }
  if (options.signer?.sender !== stream) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `the harness of ${stream} needs a bus signer for ${stream}, not ${options.signer?.sender ?? "none"}`, {
      details: { path: "signer" },
    });
  }
  const shutdownGraceMs = positiveInt(options.shutdownGraceMs, "shutdownGraceMs", 0);
  const blockMs = positiveInt(options.blockMs ?? 1000, "blockMs", 1);
  const consumer = options.consumer ?? consumerName(stream);
  const bus = options.bus;
  const logger = (options.logger ?? silentLogger).child({ component: "harness", stream, consumer });
  const health = options.health ?? new DependencyHealth({ logger });
  const group = HARNESS_GROUP;
  const flags = options.flags;
  const queueKind = source.kind === EndpointKind.ROLE ? "role" : "team";
  const accepting = (): boolean => !flags || (flags.busEnabled() && flags.harnessEnabled(queueKind, source.id));
  const readBlockMs = flags ? Math.min(blockMs, FLAG_READ_BLOCK_CAP_MS) : blockMs;
  let paused = false;

  const inFlight = new Map<string, RunningTurn>();
  // Dead-letter moves are quick and hold no slot, but a stop still waits for them before the bus is closed.
  const deadLettering = new Set<Promise<void>>();
  const counters = { completed: 0, failed: 0, delegated: 0, unsent: 0, stale: 0, duplicate: 0, abandoned: 0, reclaimed: 0, deadLettered: 0 };
  // Aborted on stop: wakes the read loop out of a blocking read, a back-off sleep or a wait for a free slot.
  const stopController = new AbortController();
  let slotFreed: (() => void) | undefined;
  let running: Promise<void> | undefined;

  const turnDeps = {
    bus,
    stream,
    group,
    consumer,
    source,
    signer: options.signer,
    handler: options.handler,
    logger,
    maxPayloadBytes,
    heartbeatMs,
    resultReader: options.resultReader,
    ...(options.replies ? { replies: options.replies } : {}),
    now: () => Date.now(),
    routed: flags ? () => flags.busRouted(queueKind, source.id) : undefined,
    ...(options.turnCheck ? { turnCheck: options.turnCheck } : {}),
    health,
  };

  const recorder = createHarnessRecorder(options.metrics, stream);
  const recordings = new Map<string, TurnRecording>();

  function count(entryId: string, outcome: TurnOutcome): void {
    counters[outcome] += 1;
    recordings.get(entryId)?.ended(outcome);
    recordings.delete(entryId);
  }

  async function deadLetter(entry: BusEntry): Promise<void> {
    const kindName = EnvelopeKind[entry.envelope.kind] ?? String(entry.envelope.kind);
    const reason = `the harness on ${stream} does not handle ${kindName} envelopes (only WORK and REPLY)`;
    let raw: Uint8Array;
    try {
      raw = envelopeToBinary(entry.envelope);
    } catch {
      raw = new Uint8Array();
    }
    try {
      await bus.deadLetter(stream, group, entry.id, raw, reason);
      counters.deadLettered += 1;
      logger.warn({ entryId: entry.id, envelopeId: entry.envelope.id, orgId: entry.envelope.orgId, kind: kindName }, "dead-lettered an entry");
    } catch (error) {
      logger.error({ err: error, entryId: entry.id }, "could not dead-letter an entry; it stays pending");
    }
  }

  /** Starts turns for the entries (`redelivered`: they come from a reclaim); returns how many were new to this harness. */
  async function dispatch(entries: readonly BusEntry[], redelivered: boolean): Promise<number> {
    // Our own turn whose touch lapsed can come back from a reclaim; never run the same entry twice at once.
    const fresh = entries.filter((entry) => !inFlight.has(entry.id));
    const handled: BusEntry[] = [];
    for (const entry of fresh) {
      if (isHandledKind(entry.envelope.kind)) {
        handled.push(entry);
        continue;
      }
      const moving = deadLetter(entry);
      deadLettering.add(moving);
      void moving.finally(() => deadLettering.delete(moving));
    }
    const { duplicates, superseded } = await screenEntries(handled, redelivered, { bus, stream, health, logger });
    for (const entry of handled) {
      const duplicateOf = duplicates.get(entry.id);
      const recording = recorder.started(entry, redelivered);
      recordings.set(entry.id, recording);
      const turn = startTurn(entry, { ...turnDeps, observer: recording.observer }, { redelivered, superseded: superseded.has(entry.id), ...(duplicateOf !== undefined ? { duplicateOf } : {}) });
      inFlight.set(entry.id, turn);
      void turn.done.then((outcome) => {
        inFlight.delete(entry.id);
        if (outcome !== "abandoned") count(entry.id, outcome);
        const wake = slotFreed;
        slotFreed = undefined;
        wake?.();
      });
    }
    return fresh.length;
  }

  function freeSlots(): number {
    return concurrency - inFlight.size;
  }

  function waitForFreeSlot(): Promise<void> {
    if (freeSlots() > 0 || stopController.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      slotFreed = resolve;
    });
  }

  async function reclaim(): Promise<void> {
    const free = freeSlots();
    if (free <= 0) return;
    try {
      const entries = await bus.reclaim({ stream, group, consumer, minIdleMs: reclaimIdleMs, count: free });
      if (entries.length > 0) {
        counters.reclaimed += await dispatch(entries, true);
        recorder.reclaimed(entries.length);
        logger.info({ count: entries.length, entryIds: entries.map((e) => e.id) }, "reclaimed stalled entries");
      }
    } catch (error) {
      if (!health.absorb(error)) logger.warn({ err: error }, "reclaim failed; retrying on the next interval");
    }
  }

  async function readLoop(): Promise<void> {
    const stop = stopController.signal;
    const reclaimEveryMs = Math.max(1, Math.floor(reclaimIdleMs / 2));
    let nextReclaimAt = 0;
    let failures = 0;
    while (!stop.aborted) {
      await waitForFreeSlot();
      if (stop.aborted) break;
      if (!accepting()) {
        await pauseWhileSwitchedOff(stop);
        continue;
      }
      // Reclaim runs in the loop rather than on its own timer so it never races a read for the same free slots.
      if (Date.now() >= nextReclaimAt) {
        await reclaim();
        nextReclaimAt = Date.now() + reclaimEveryMs;
        if (freeSlots() <= 0) continue;
      }
      const free = freeSlots();
      try {
        const entries = await bus.read({
          stream,
          group,
          consumer,
          count: free,
          blockMs: Math.max(1, Math.min(readBlockMs, nextReclaimAt - Date.now())),
          signal: stop,
        });
        failures = 0;
        // Entries a read returns are already ours (pending under this consumer); running them now, within
        // the grace, is faster than leaving them for a reclaim even when a stop arrived meanwhile.
        await dispatch(entries, false);
      } catch (error) {
        if (stop.aborted) break;
        failures += 1;
        const backoffMs = outageBackoffMs(failures);
        if (health.absorb(error)) logger.debug({ err: error, backoffMs }, "read failed in an outage; backing off");
        else logger.warn({ err: error, backoffMs }, "read failed; backing off");
        await sleep(backoffMs, stop);
      }
    }
  }

  /** Switched off: take nothing new (turns in flight run on and send their outcome) until switched on again. */
  async function pauseWhileSwitchedOff(stop: AbortSignal): Promise<void> {
    paused = true;
    logger.info({ inFlight: inFlight.size }, "switched off (BUS_ENABLED or HARNESS_ENABLED): taking no new work; turns in flight finish");
    while (!stop.aborted && !accepting()) await sleep(PAUSE_CHECK_MS, stop);
    paused = false;
    if (!stop.aborted) logger.info("switched on: taking work again");
  }

  async function drain(): Promise<void> {
    await Promise.all(deadLettering);
    if (inFlight.size === 0) return;
    logger.info({ inFlight: inFlight.size, shutdownGraceMs }, "stopping: waiting for in-flight turns");
    const graceController = new AbortController();
    const turns = [...inFlight.values()];
    await Promise.race([Promise.all(turns.map((t) => t.done)), sleep(shutdownGraceMs, graceController.signal)]);
    graceController.abort();
    for (const turn of inFlight.values()) {
      if (turn.abandon(`shutdown grace of ${shutdownGraceMs} ms exceeded`)) count(turn.entryId, "abandoned");
    }
    inFlight.clear();
  }

  async function run(): Promise<void> {
    if (!stopController.signal.aborted) {
      await bus.ensureGroup(stream, group);
      logger.info({ concurrency }, "harness started");
      await readLoop();
    }
    await drain();
    options.signal?.removeEventListener("abort", onAbort);
    logger.info({ ...counters }, "harness stopped");
  }

  function stop(): void {
    if (stopController.signal.aborted) return;
    stopController.abort();
    const wake = slotFreed;
    slotFreed = undefined;
    wake?.();
  }

  function onAbort(): void {
    stop();
  }

  if (options.signal?.aborted) stop();
  else options.signal?.addEventListener("abort", onAbort, { once: true });

  return {
    stream,
    consumer,
    start() {
      running ??= run();
      return running;
    },
    async close() {
      stop();
      // Closing a harness that never started has nothing to drain.
      if (running) await running.catch(() => {});
      else options.signal?.removeEventListener("abort", onAbort);
    },
    get stats(): HarnessStats {
      return { inFlight: inFlight.size, ...counters, paused };
    },
  };
}
