/**
 * Validation problems of a workflow definition and the one error that reports them all.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";

export const MAX_SOURCE_CHARS = 1_000_000;
const MAX_PROBLEMS_IN_MESSAGE = 20;

export interface WorkflowProblem {
  /** The field the problem is about, e.g. `steps[2].needs[0]`; "" for the document as a whole. */
  path: string;
  reason: string;
}

function formatProblem(p: WorkflowProblem): string {
  return p.path ? `${p.path}: ${p.reason}` : p.reason;
}

export function invalidWorkflow(problems: WorkflowProblem[]): SwitchyardError {
  const first = problems[0] ?? { path: "", reason: "invalid workflow definition" };
  let message = formatProblem(first);
  if (problems.length > 1) {
    const shown = problems.slice(0, MAX_PROBLEMS_IN_MESSAGE).map(formatProblem).join("; ");
    const more = problems.length > MAX_PROBLEMS_IN_MESSAGE ? `; and ${problems.length - MAX_PROBLEMS_IN_MESSAGE} more` : "";
    message = `${problems.length} problems: ${shown}${more}`;
  }
  return new SwitchyardError(ErrorCode.InvalidWorkflow, message, {
    details: { path: first.path, reason: first.reason, errors: problems },
  });
}
