/**
 * Workflows: the tenant's workflows; one workflow's versions, its definition as YAML and its DAG; and a form to
 * submit a new version, whose validation problems are shown with the line of the text they are about.
 */
import { useState } from "preact/hooks";
import { stringify } from "yaml";
import { problemOf, type Problem } from "../api";
import { Dag, definitionGraph } from "../components/dag";
import { ProblemBox } from "../components/problem";
import { useLoad } from "../components/use-load";
import { useConsole } from "../context";
import { formatTime } from "../format";
import { href } from "../router";
import { lineOfPath } from "../yaml-lines";
import { Table } from "../components/table";

export function WorkflowsPage({ ref_ }: { ref_: string | undefined }) {
  const { api, tenant } = useConsole();
  const list = useLoad((signal) => api.workflows.list({}, { signal }), [api, tenant]);
  return (
    <section>
      <h1>Workflows</h1>
      <ProblemBox problem={list.problem} />
      <Table headers={["Workflow", "Latest", "Versions", "Description", "Created"]}>
        {list.data?.workflows.map((w) => (
          <tr>
            <td>
              <a href={href("workflows", w.ref)} aria-current={ref_?.split("@")[0] === w.name ? "true" : undefined}>
                {w.name}
              </a>
            </td>
            <td>{w.version}</td>
            <td>{w.versions}</td>
            <td>{w.description ?? ""}</td>
            <td>{formatTime(w.createdAt)}</td>
          </tr>
        ))}
      </Table>
      {ref_ && <WorkflowVersion ref_={ref_} versions={list.data?.workflows.find((w) => w.name === ref_.split("@")[0])?.versions ?? 0} />}
      <SubmitWorkflow onSubmitted={list.reload} />
    </section>
  );
}

function WorkflowVersion({ ref_, versions }: { ref_: string; versions: number }) {
  const { api } = useConsole();
  const got = useLoad((signal) => api.workflows.get({ ref: ref_ }, { signal }), [api, ref_]);
  const wf = got.data?.workflow;
  const definition = wf?.definition ?? null;
  const graph = definitionGraph(definition);
  return (
    <article class="workflow">
      <ProblemBox problem={got.problem} />
      {wf && (
        <>
          <h2>{wf.ref}</h2>
          <nav aria-label="Versions" class="versions">
            Versions:{" "}
            {Array.from({ length: versions }, (_, i) => i + 1).map((v) => (
              <a href={href("workflows", `${wf.name}@${v}`)} aria-current={v === wf.version ? "true" : undefined}>
                {v}
              </a>
            ))}
          </nav>
          <p class="hint">
            digest <code>{wf.digest.slice(0, 16)}…</code>, created {formatTime(wf.createdAt)}
          </p>
          <Dag nodes={graph.nodes} edges={graph.edges} title={`Steps of ${wf.ref}`} />
          <h3>Definition</h3>
          <pre class="yaml" tabIndex={0}>
            {stringify(definition)}
          </pre>
        </>
      )}
    </article>
  );
}

function SubmitWorkflow({ onSubmitted }: { onSubmitted: () => void }) {
  const { api } = useConsole();
  const [source, setSource] = useState("");
  const [problem, setProblem] = useState<(Problem & { lines: (number | undefined)[] }) | undefined>(undefined);
  const [done, setDone] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setDone(undefined);
    setProblem(undefined);
    try {
      const out = await api.workflows.submit({ source, format: "" });
      setDone(out.created ? `Stored ${out.ref}.` : `Identical to ${out.ref}, which is already stored.`);
      onSubmitted();
    } catch (error) {
      const p = problemOf(error);
      setProblem({ ...p, lines: p.violations.map((v) => safeLine(source, v.path)) });
    } finally {
      setBusy(false);
    }
  };
  const lines = source.split("\n");
  return (
    <form class="submit-workflow" onSubmit={submit}>
      <h2>Submit a new version</h2>
      <label for="workflow-source">Definition (YAML or JSON)</label>
      <textarea id="workflow-source" rows={14} value={source} onInput={(e) => setSource((e.target as HTMLTextAreaElement).value)} spellcheck={false} />
      <button type="submit" disabled={busy || !source.trim()}>
        Validate and submit
      </button>
      {done && (
        <p role="status" class="ok">
          {done}
        </p>
      )}
      {problem && (
        <div class="problem" role="alert">
          <p>{problem.message}</p>
          <ul class="violations">
            {problem.violations.map((v, i) => {
              const line = problem.lines[i];
              return (
                <li>
                  {line !== undefined ? <span class="line">line {line}</span> : null} <code>{v.path || "(definition)"}</code> {v.reason}
                  {line !== undefined && <pre class="line-text">{`${line} | ${lines[line - 1] ?? ""}`}</pre>}
                </li>
              );
            })}
          </ul>
        </div>
      )}
    </form>
  );
}

function safeLine(source: string, path: string): number | undefined {
  try {
    return path ? lineOfPath(source, path) : undefined;
  } catch {
    return undefined;
  }
}
