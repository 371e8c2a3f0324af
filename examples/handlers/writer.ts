/**
 * Writes a draft from the research output among its needed steps (`input.steps`).
 */
import type { Handler } from "switchyard/harness";
import { record, stepOutputs, topicOf } from "./topic.js";

/** The needed step that looks like research (has `findings`), preferring one named `research`. */
function researchOf(input: unknown): Record<string, unknown> | undefined {
  const steps = stepOutputs(input);
  const named = record(steps.research);
  if (named) return named;
  for (const output of Object.values(steps)) {
    const candidate = record(output);
    if (candidate && "findings" in candidate) return candidate;
  }
  return undefined;
}

const writer: Handler = (work, ctx) => {
  const research = researchOf(work.input);
  const topic = typeof research?.topic === "string" ? research.topic : topicOf(work.input);
  const findings = Array.isArray(research?.findings) ? research.findings.map(String) : [];
  const summary = record(research?.analysis)?.summary;
  ctx.usage({ cost: 0.4 });
  const body = [
    `# ${topic}`,
    "",
    ...(typeof summary === "string" ? [summary, ""] : []),
    ...findings.map((finding) => `- ${finding}`),
  ].join("\n");
  return { title: topic, draft: body, words: body.split(/\s+/).filter(Boolean).length };
};

export default writer;
