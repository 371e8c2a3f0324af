/**
 * A step's attempts as a timeline (when dispatched, where, how long, how it ended, who approved), and, for a
 * FOREIGN step, its bridges to the agent with their state.
 */
import type { ForeignBridge } from "../../../src/gen/switchyard/api/v1/foreign_pb.js";
import type { StepAttempt } from "../../../src/gen/switchyard/api/v1/tasks_pb.js";
import { formatCost, formatDuration, formatTime } from "../format";

export function StepAttempts({ attempts }: { attempts: StepAttempt[] }) {
  if (attempts.length === 0) return null;
  return (
    <ol class="timeline" aria-label="Attempts">
      {attempts.map((a) => (
        <li data-attempt={a.attempt}>
          <span class="timeline-at">{formatTime(a.dispatchedAt)}</span> attempt {a.attempt}: {a.action} → {a.destination}{" "}
          <span class={`verdict verdict-${a.verdict}`}>{a.verdict}</span>
          {a.rule ? <span class="hint"> ({a.rule})</span> : null}
          <br />
          <span class={`outcome outcome-${a.outcome}`}>{a.outcome.replace(/_/g, " ")}</span>
          {a.durationMs > 0n ? ` after ${formatDuration(Number(a.durationMs))}` : ""}
          {a.cost ? `, cost ${formatCost(a.cost)}` : ""}
          {a.approvedBy ? `, approved by ${a.approvedBy}` : ""}
          {a.reason ? <span class="hint"> — {a.reason}</span> : null}
        </li>
      ))}
    </ol>
  );
}

export function StepBridges({ bridges }: { bridges: ForeignBridge[] }) {
  if (bridges.length === 0) return null;
  return (
    <>
      <h4>Bridges to the agent</h4>
      <ul class="bridges">
        {bridges.map((b) => (
          <li data-bridge={b.id}>
            attempt {b.attempt}: <strong>{b.status.replace(/_/g, " ")}</strong>
            {b.lastState ? ` (agent said ${b.lastState})` : ""} · A2A {b.dialect}
            {b.delivery ? ` by ${b.delivery}` : ""}
            {b.polls ? `, ${b.polls} polls` : ""}
            {b.resolvedAt ? `, resolved ${formatTime(b.resolvedAt)}` : ""}
          </li>
        ))}
      </ul>
    </>
  );
}
