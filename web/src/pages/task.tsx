/**
 * One task, live: a Watch stream keeps it current (and re-reads its audit rows on each change). Shows the DAG with
 * each step's status, the steps with their input/output and cost, a timeline per step from the audit rows, the
 * hop table, approvals waiting, and cancel.
 */
import { useEffect, useState } from "preact/hooks";
import type { Task } from "../../../src/gen/switchyard/api/v1/tasks_pb.js";
import { StepKind } from "../../../src/gen/switchyard/api/v1/tasks_pb.js";
import { isAbort, problemOf, type Problem } from "../api";
import { Dag, definitionGraph, type DagEdge, type DagNode } from "../components/dag";
import { JsonView } from "../components/json-view";
import { ProblemBox } from "../components/problem";
import { Status } from "../components/status";
import { useAction, useLoad } from "../components/use-load";
import { useConsole } from "../context";
import { formatCost, formatTime, isFinished, jsonOf, stepStatusWord, taskStatusWord } from "../format";
import { href } from "../router";
import { StepAttempts, StepBridges } from "./step-attempts";
import { AuditTable } from "./task-audit";

export function TaskPage({ id }: { id: string }) {
  const { api } = useConsole();
  const [task, setTask] = useState<Task | undefined>(undefined);
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  const [changes, setChanges] = useState(0);
  useEffect(() => {
    const abort = new AbortController();
    setTask(undefined);
    void (async () => {
      try {
        for await (const { task: next } of api.tasks.watch({ id }, { signal: abort.signal })) {
          if (next) setTask(next);
          setChanges((c) => c + 1);
        }
        // The stream ends once the task finished; read it once more so nothing between the last change and the end is missed.
        const { task: last } = await api.tasks.get({ id }, { signal: abort.signal });
        if (last) setTask(last);
        setChanges((c) => c + 1);
      } catch (error) {
        if (!isAbort(error)) setProblem(problemOf(error));
      }
    })();
    return () => abort.abort();
  }, [api, id]);
  const workflow = useLoad((signal) => (task ? api.workflows.get({ ref: task.workflow }, { signal }) : Promise.resolve(undefined)), [api, task?.workflow]);
  const audit = useLoad((signal) => api.audit.listRows({ taskId: id, limit: 1000 }, { signal }), [api, id, changes]);

  if (problem) return <ProblemBox problem={problem} />;
  if (!task) return <p class="loading">Loading task {id}…</p>;
  const graph = definitionGraph(workflow.data?.workflow?.definition);
  const byId = new Map(task.steps.map((s) => [s.id, s]));
  const nodes: DagNode[] = graph.nodes.map((n) => ({ ...n, status: stepStatusWord(byId.get(n.id)?.status ?? 0) }));
  const edges: DagEdge[] = [...graph.edges];
  for (const step of task.steps.filter((s) => s.kind === StepKind.DELEGATION)) {
    nodes.push({ id: step.id, destination: step.destination, status: stepStatusWord(step.status), delegation: true });
    edges.push({ from: step.parentStepId ?? step.id.replace(/\.d\d+$/, ""), to: step.id, delegation: true });
  }
  const rows = audit.data?.rows ?? [];
  return (
    <section>
      <p class="crumbs">
        <a href={href("tasks")}>Tasks</a> / <code>{task.id}</code>
      </p>
      <h1>
        {task.workflow} <Status word={taskStatusWord(task.status)} />
      </h1>
      <dl class="facts">
        <dt>Started</dt>
        <dd>{formatTime(task.createdAt)}</dd>
        <dt>Finished</dt>
        <dd>{formatTime(task.finishedAt)}</dd>
        <dt>Cost</dt>
        <dd data-testid="task-cost">{formatCost(task.cost, task.budget)}</dd>
        {task.error && (
          <>
            <dt>Error</dt>
            <dd class="error-text">
              {task.error.code}: {task.error.message}
            </dd>
          </>
        )}
      </dl>
      {!isFinished(task.status) && <CancelTask id={task.id} />}
      <h2>Steps</h2>
      {nodes.length > 0 && <Dag nodes={nodes} edges={edges} title={`Steps of task ${task.id}`} />}
      <div class="steps">
        {task.steps.map((step) => (
          <article class="step" data-step={step.id}>
            <h3>
              {step.kind === StepKind.DELEGATION ? "↳ " : ""}
              {step.id} <Status word={stepStatusWord(step.status)} />
            </h3>
            <dl class="facts">
              <dt>Destination</dt>
              <dd>{step.destination}</dd>
              <dt>Attempts</dt>
              <dd>{step.attempts}</dd>
              <dt>Cost</dt>
              <dd>{formatCost(step.cost)}</dd>
              {step.approvalId && (
                <>
                  <dt>Approval</dt>
                  <dd>
                    <a href={href("approvals")}>{step.approvalId}</a>
                  </dd>
                </>
              )}
              {step.parentStepId && (
                <>
                  <dt>Delegated by</dt>
                  <dd>
                    {step.parentStepId} (depth {step.depth}
                    {step.correlationId ? `, correlation ${step.correlationId}` : ""})
                  </dd>
                </>
              )}
              {step.awaiting.length > 0 && (
                <>
                  <dt>Waiting for</dt>
                  <dd>{step.awaiting.map((a) => `${a.delegateStepId}${a.arrived ? " (arrived)" : ""}`).join(", ")}</dd>
                </>
              )}
              {step.error && (
                <>
                  <dt>Error</dt>
                  <dd class="error-text">
                    {step.error.code}: {step.error.message}
                  </dd>
                </>
              )}
            </dl>
            <StepAttempts attempts={step.history} />
            <StepBridges bridges={step.bridges} />
            <h4>Output</h4>
            <JsonView value={jsonOf(step.output)} name={`${task.id}-${step.id}-output`} />
          </article>
        ))}
      </div>
      <h2>Input</h2>
      <JsonView value={jsonOf(task.input)} name={`${task.id}-input`} />
      <h2>Audit rows</h2>
      <ProblemBox problem={audit.problem} />
      <AuditTable rows={rows} />
    </section>
  );
}

function CancelTask({ id }: { id: string }) {
  const { api } = useConsole();
  const action = useAction();
  const cancel = (event: Event) => {
    event.preventDefault();
    const reason = ((event.target as HTMLFormElement).elements.namedItem("reason") as HTMLInputElement).value;
    void action.run(async () => {
      await api.tasks.cancel({ id, reason, actor: "console" });
    });
  };
  return (
    <form class="inline-form" onSubmit={cancel}>
      <label>
        Reason <input name="reason" />
      </label>
      <button type="submit" class="danger" disabled={action.busy}>
        Cancel task
      </button>
      <ProblemBox problem={action.problem} />
    </form>
  );
}
