/** Starts a task of a workflow with a JSON input; a bad JSON text is refused here, with where it broke. */
import { useState } from "preact/hooks";
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { ProblemBox } from "../components/problem";
import { useAction } from "../components/use-load";
import { useConsole } from "../context";
import { href, navigate } from "../router";

export function StartTask({ workflows }: { workflows: string[] }) {
  const { api } = useConsole();
  const action = useAction();
  const [workflow, setWorkflow] = useState("");
  const [input, setInput] = useState("{}");
  const [jsonError, setJsonError] = useState<string | undefined>(undefined);
  const start = (event: Event) => {
    event.preventDefault();
    let parsed: JsonValue;
    try {
      parsed = JSON.parse(input.trim() || "{}") as JsonValue;
    } catch (e) {
      setJsonError(`The input is not JSON: ${(e as Error).message}`);
      return;
    }
    setJsonError(undefined);
    void action.run(async () => {
      const { task } = await api.tasks.start({ workflow: workflow || workflows[0] || "", input: fromJson(ValueSchema, parsed) });
      if (task) navigate(href("tasks", task.id));
    });
  };
  return (
    <details class="start">
      <summary>Start a task</summary>
      <form onSubmit={start}>
        <label>
          Workflow{" "}
          <select name="workflow" value={workflow} onChange={(e) => setWorkflow((e.target as HTMLSelectElement).value)}>
            {workflows.map((w) => (
              <option value={w}>{w}</option>
            ))}
          </select>
        </label>
        <label for="task-input">Input (JSON)</label>
        <textarea id="task-input" name="input" rows={4} value={input} onInput={(e) => setInput((e.target as HTMLTextAreaElement).value)} aria-invalid={jsonError ? "true" : undefined} />
        {jsonError && (
          <p class="problem" role="alert">
            {jsonError}
          </p>
        )}
        <ProblemBox problem={action.problem} />
        <button type="submit" disabled={action.busy || workflows.length === 0}>
          Start
        </button>
      </form>
    </details>
  );
}
