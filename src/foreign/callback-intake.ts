/**
 * The callback route's trips to Postgres, group-committed across concurrent pushes (MicroBatcher), so a burst costs
 * a handful of statements per batch instead of per push — on this kind of machine every round trip costs far more
 * than the work in it (PERFORMANCE.md):
 *
 * 1. `find`: the bridge, the tenant link key its URL token must verify with and the agent's pricing rates, one read
 *    per batch. The row's version (`xmin`) comes along.
 * 2. `apply`: verified observations, applied optimistically in ONE statement per batch — each bridge's new state is
 *    computed from the row `find` read (bridge-transition.ts) and written only if the row is still that version
 *    (`xmin` unchanged), together with the outbox rows of the RESULTs it resolves; nothing else is locked. Bridges
 *    that changed in between (a concurrent push, the sweep, the sender) are applied again through the locking path
 *    (resume.ts), which reads them afresh. Either way a bridge resolves once and its RESULT is written once.
 *
 * Pushes arriving while a batch runs form the next one, so a lone push waits for nothing. One per process: the
 * gateway builds it with the runtime (`runtime.a2a.callback.intake`).
 */
import type { Metrics } from "../metrics/metrics.js";
import { isDatabaseUnavailable } from "../store/db.js";
import { MicroBatcher } from "../store/micro-batcher.js";
import type { BridgeRecord, CallbackTarget } from "../store/bridges/bridge-store.js";
import { isBridgeId, isOpen } from "../core/bridge-status.js";
import { observe, resultFor, type ForeignObservation, type ObservationOutcome } from "./bridge-transition.js";
import type { OutboxEnvelope } from "./foreign-result.js";
import type { HopRates } from "./pricing.js";
import { applyObservations, noteTransition, reportLate, type BridgeResumeDeps } from "./resume.js";
import type { ForeignArtifact } from "./a2a/artifacts.js";

export type { CallbackTarget } from "../store/bridges/bridge-store.js";

interface Observed {
  target: CallbackTarget;
  observation: ForeignObservation;
}

export interface CallbackIntakeOptions extends BridgeResumeDeps {
  /** Pushes per batch at most. @defaultValue 200 */
  maxBatch?: number;
  /** Batch sizes and optimistic-write conflicts are recorded here. */
  metrics?: Pick<Metrics, "a2aCallbackBatchSize" | "a2aCallbackConflicts" | "a2aLateArtifacts">;
}

export class CallbackIntake {
  private readonly lookups: MicroBatcher<string, CallbackTarget | undefined>;
  private readonly observations: MicroBatcher<Observed, ObservationOutcome>;

  constructor(private readonly options: CallbackIntakeOptions) {
    const maxBatch = options.maxBatch ?? 200;
    const isolate = (error: unknown) => !isDatabaseUnavailable(error);
    // Lookups lock nothing, so two may overlap; one batch of observations at a time keeps the optimistic writes of
    // this process from racing each other.
    this.lookups = new MicroBatcher({ run: (ids) => this.lookupBatch(ids), maxBatch, isolate });
    this.observations = new MicroBatcher({ run: (items) => this.applyBatch(items), maxBatch, isolate });
  }

  /** The bridge `bridgeId` names, with its key and agent cost; undefined for an unknown (or impossible) bridge id. */
  async find(bridgeId: string): Promise<CallbackTarget | undefined> {
    if (!isBridgeId(bridgeId)) return undefined;
    return this.lookups.submit(bridgeId);
  }

  /**
   * Applies a verified observation to the bridge `find` answered. Rejects with a unique violation (23505) when the
   * push claims a foreign task id another bridge of the tenant owns.
   */
  apply(target: CallbackTarget, observation: ForeignObservation): Promise<ObservationOutcome> {
    return this.observations.submit({ target, observation });
  }

  private async lookupBatch(ids: string[]): Promise<Array<CallbackTarget | undefined>> {
    const targets = await this.options.bridges.callbackTargets(this.options.pool, [...new Set(ids)]);
    const found = new Map(targets.map((target) => [target.bridge.id, target]));
    return ids.map((id) => found.get(id));
  }

  private async applyBatch(items: Observed[]): Promise<ObservationOutcome[]> {
    const now = (this.options.clock ?? Date.now)();
    this.options.metrics?.a2aCallbackBatchSize.observe(items.length);
    const outcomes: Array<ObservationOutcome | undefined> = items.map(() => undefined);
    // Each bridge's observations in order, from the version `find` read; a bridge read at two versions (its pushes
    // were looked up in different batches around a change) goes to the locking path whole.
    const perBridge = new Map<
      string,
      { version: string; start: BridgeRecord; bridge: BridgeRecord; rates: HopRates; indexes: number[]; results: OutboxEnvelope[]; stale: boolean; pollNow: boolean; late: ForeignArtifact[] }
    >();
    items.forEach(({ target }, index) => {
      const entry = perBridge.get(target.bridge.id);
      if (!entry) {
        perBridge.set(target.bridge.id, { version: target.version, start: target.bridge, bridge: target.bridge, rates: target.rates, indexes: [index], results: [], stale: false, pollNow: false, late: [] });
      } else {
        entry.indexes.push(index);
        if (entry.version !== target.version) entry.stale = true;
      }
    });
    for (const entry of perBridge.values()) {
      if (entry.stale) continue;
      for (const index of entry.indexes) {
        const step = observe(entry.bridge, items[index]!.observation, this.options.maxPayloadBytes);
        entry.bridge = step.bridge;
        if (step.end) {
          const priced = resultFor(step.bridge, step.end, entry.rates, this.options, now);
          entry.bridge = priced.bridge;
          entry.results.push(priced.result);
        }
        noteTransition(entry, step);
        outcomes[index] = step.outcome;
      }
    }
    const writes = [...perBridge.values()].filter((e) => !e.stale && e.bridge !== e.start);
    const { written, outbox } = await this.options.bridges.write(
      this.options.pool,
      writes.map((e) => ({ bridge: e.bridge, version: e.version, results: e.results, pollNow: e.pollNow && isOpen(e.bridge.status) })),
    );
    for (const e of writes) if (e.late.length > 0 && written.has(e.bridge.id)) reportLate(this.options, e.bridge, e.late);
    // Whatever could not be applied on the version read — changed meanwhile, or read at two versions — is applied
    // again from scratch under row locks.
    const retry = [...perBridge.values()].filter((e) => e.stale || (e.bridge !== e.start && !written.has(e.bridge.id))).flatMap((e) => e.indexes);
    if (outbox.length > 0 && this.options.publisher) await this.options.publisher.publish(outbox);
    if (retry.length > 0) {
      this.options.metrics?.a2aCallbackConflicts.inc(retry.length);
      retry.sort((a, b) => a - b);
      const again = await applyObservations(this.options, retry.map((i) => ({ bridgeId: items[i]!.target.bridge.id, observation: items[i]!.observation })));
      retry.forEach((index, i) => (outcomes[index] = again[i]!));
    }
    return outcomes as ObservationOutcome[];
  }
}
