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
import type { LinkKey } from "../approvals/link-keys.js";
import type { Metrics } from "../metrics/metrics.js";
import { isDatabaseUnavailable } from "../store/db.js";
import { MicroBatcher } from "../store/micro-batcher.js";
import { BRIDGE_COLUMNS_OF_B, isBridgeId, toBridge, writeBridges, type BridgeRecord } from "./bridge-store.js";
import { observe, resultFor, type ForeignObservation, type ObservationOutcome } from "./bridge-transition.js";
import type { OutboxEnvelope } from "./foreign-result.js";
import type { HopRates } from "./pricing.js";
import { applyObservations, noteTransition, ratesOf, reportLate, type BridgeResumeDeps } from "./resume.js";
import type { ForeignArtifact } from "./a2a/artifacts.js";
import { isOpen } from "./bridge-store.js";

export interface CallbackTarget {
  bridge: BridgeRecord;
  /** The tenant's link key the bridge's tokens are signed with; undefined when the tenant no longer has it. */
  key: Pick<LinkKey, "kid" | "secret" | "retiredAt"> | undefined;
  /** The agent's pricing rates (0 when the agent was deleted meanwhile). */
  rates: HopRates;
  /** The row version `find` read (`xmin`): the optimistic write applies only to that version. */
  version: string;
}

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
    const { rows } = await this.options.pool.query(
      `SELECT ${BRIDGE_COLUMNS_OF_B}, b.xmin::text AS version, k.kid AS key_kid, k.secret AS key_secret, k.retired_at AS key_retired_at,
              coalesce(a.cost_estimate, 0) AS cost, coalesce(a.cost_per_second, 0) AS cost_per_second
       FROM a2a_bridge b
       LEFT JOIN link_keys k ON k.org_id = b.org_id AND k.kid = b.token_kid
       LEFT JOIN foreign_agents a ON a.org_id = b.org_id AND a.agent_key = b.agent_key
       WHERE b.id = ANY($1::uuid[])`,
      [[...new Set(ids)]],
    );
    const found = new Map<string, CallbackTarget>();
    for (const row of rows) {
      const key = row.key_kid ? { kid: row.key_kid as string, secret: row.key_secret as Buffer, retiredAt: row.key_retired_at ? (row.key_retired_at as Date).toISOString() : null } : undefined;
      found.set(row.id as string, { bridge: toBridge(row), key, rates: ratesOf(row), version: row.version as string });
    }
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
    const { written, outbox } = await writeBridges(
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
