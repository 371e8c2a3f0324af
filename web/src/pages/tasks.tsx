/**
 * Tasks: the tenant's tasks newest first, filtered by status, workflow and age (all server-side: the age is the
 * API's `created_after`), paged with the API's tokens. Rows of unfinished tasks update live through Watch
 * streams; new tasks appear on a periodic refresh of the first page.
 */
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { useEffect, useState } from "preact/hooks";
import type { TaskStatus, TaskSummary } from "../../../src/gen/switchyard/api/v1/tasks_pb.js";
import { isAbort } from "../api";
import { ProblemBox } from "../components/problem";
import { Status } from "../components/status";
import { useLoad } from "../components/use-load";
import { useConsole } from "../context";
import { formatCost, formatTime, isFinished, TASK_FILTERS, taskStatusWord } from "../format";
import { href } from "../router";
import { StartTask } from "./start-task";
import { Table } from "../components/table";

/** Watch streams at once from this page (the gateway bounds streams per tenant). */
const MAX_WATCHES = 10;
const REFRESH_MS = 5000;
const AGES = [
  { label: "any time", ms: 0 },
  { label: "last hour", ms: 3_600_000 },
  { label: "last day", ms: 86_400_000 },
  { label: "last week", ms: 7 * 86_400_000 },
];

export function TasksPage() {
  const { api } = useConsole();
  const [statuses, setStatuses] = useState<TaskStatus[]>([]);
  const [workflow, setWorkflow] = useState("");
  const [age, setAge] = useState(0);
  const [pages, setPages] = useState<string[]>([""]);
  const [tick, setTick] = useState(0);
  const token = pages[pages.length - 1]!;
  const workflows = useLoad((signal) => api.workflows.list({}, { signal }), [api]);
  // The age filter is fixed to an instant when chosen, so paging keeps the same filter (as the API asks).
  const [since, setSince] = useState<number | undefined>(undefined);
  const list = useLoad(
    (signal) => api.tasks.list({ statuses, workflow, pageSize: 25, pageToken: token, ...(since !== undefined ? { createdAfter: timestampFromMs(since) } : {}) }, { signal }),
    [api, statuses.join(","), workflow, token, tick, since],
  );
  const [live, setLive] = useState<Record<string, TaskSummary>>({});

  // The first page refreshes by itself so that new tasks show up.
  useEffect(() => {
    if (token !== "") return;
    const timer = setInterval(() => setTick((t) => t + 1), REFRESH_MS);
    return () => clearInterval(timer);
  }, [token]);

  const tasks = list.data?.tasks ?? [];
  const open = tasks.filter((t) => !isFinished(t.status)).slice(0, MAX_WATCHES).map((t) => t.id);
  useEffect(() => {
    const abort = new AbortController();
    for (const id of open) {
      void (async () => {
        try {
          for await (const { task } of api.tasks.watch({ id }, { signal: abort.signal })) {
            if (!task) continue;
            setLive((prev) => {
              const base = prev[id] ?? tasks.find((t) => t.id === id);
              return base ? { ...prev, [id]: { ...base, status: task.status, cost: task.cost, finishedAt: task.finishedAt, error: task.error } } : prev;
            });
          }
        } catch (error) {
          if (!isAbort(error)) console.warn("watch ended", id, error);
        }
      })();
    }
    return () => abort.abort();
  }, [api, open.join(",")]);

  const shown = tasks.map((t) => live[t.id] ?? t);
  const toggle = (value: TaskStatus) => {
    setPages([""]);
    setStatuses((s) => (s.includes(value) ? s.filter((v) => v !== value) : [...s, value]));
  };
  return (
    <section>
      <h1>Tasks</h1>
      <StartTask workflows={workflows.data?.workflows.map((w) => w.name) ?? []} />
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filters">
        <fieldset>
          <legend>Status</legend>
          {TASK_FILTERS.map((f) => (
            <label>
              <input type="checkbox" checked={statuses.includes(f.value)} onChange={() => toggle(f.value)} /> {f.word}
            </label>
          ))}
        </fieldset>
        <label>
          Workflow{" "}
          <select
            value={workflow}
            onChange={(e) => {
              setPages([""]);
              setWorkflow((e.target as HTMLSelectElement).value);
            }}
          >
            <option value="">any</option>
            {workflows.data?.workflows.map((w) => (
              <option value={w.name}>{w.name}</option>
            ))}
          </select>
        </label>
        <label>
          Started{" "}
          <select
            value={String(age)}
            onChange={(e) => {
              const ms = Number((e.target as HTMLSelectElement).value);
              setAge(ms);
              setSince(ms === 0 ? undefined : Date.now() - ms);
              setPages([""]);
            }}
          >
            {AGES.map((a) => (
              <option value={String(a.ms)}>{a.label}</option>
            ))}
          </select>
        </label>
      </form>
      <ProblemBox problem={list.problem} />
      <Table class="tasks" headers={["Task", "Workflow", "Status", "Cost", "Started", "Finished"]}>
        {shown.map((t) => (
          <tr data-task={t.id}>
            <td>
              <a href={href("tasks", t.id)}>
                <code>{t.id}</code>
              </a>
            </td>
            <td>{t.workflow}</td>
            <td>
              <Status word={taskStatusWord(t.status)} />
              {t.error && <div class="error-text">{t.error.code}</div>}
            </td>
            <td>{formatCost(t.cost, t.budget)}</td>
            <td>{formatTime(t.createdAt)}</td>
            <td>{formatTime(t.finishedAt)}</td>
          </tr>
        ))}
      </Table>
      {!list.loading && shown.length === 0 && <p class="hint">No tasks here.</p>}
      <nav class="pager" aria-label="Pages of tasks">
        <button type="button" disabled={pages.length === 1} onClick={() => setPages((p) => p.slice(0, -1))}>
          Newer
        </button>
        <button type="button" disabled={!list.data?.nextPageToken} onClick={() => setPages((p) => [...p, list.data!.nextPageToken])}>
          Older
        </button>
      </nav>
    </section>
  );
}
