import type { Problem } from "../api";

export function ProblemBox({ problem }: { problem: Problem | undefined }) {
  if (!problem) return null;
  return (
    <div class="problem" role="alert">
      <strong>{problem.code ? `${problem.code}: ` : ""}</strong>
      {problem.message}
      {problem.violations.length > 0 && (
        <ul>
          {problem.violations.map((v) => (
            <li>
              <code>{v.path || "(definition)"}</code> {v.reason}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
