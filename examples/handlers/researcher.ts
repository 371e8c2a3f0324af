/**
 * Researches a topic by delegating the analysis to `role:analyst`, then combining it with its own findings.
 *
 * Two turns of the same handler (the resume signature, see src/harness/types.ts): the first returns
 * `ctx.delegate(...)` and the harness stands the turn down; the second runs when the analyst's REPLY arrives, with
 * `work.resume` set, and pulls the analyst's stored output through `ctx.readResult`.
 */
import type { Handler } from "switchyard/harness";
import { topicOf } from "./topic.js";

const researcher: Handler = async (work, ctx) => {
  const topic = topicOf(work.input);
  if (!work.resume) {
    ctx.usage({ cost: 0.2 });
    return ctx.delegate("role:analyst", { topic }, { correlationId: `analysis:${work.stepId}`, state: { topic } });
  }
  const { reply, state } = work.resume;
  if (reply.status === "error") {
    throw new Error(`the analyst failed: ${reply.error?.code ?? "ERROR"} ${reply.error?.message ?? ""}`.trim());
  }
  const analysis = await ctx.readResult(reply.resultRef);
  const checkpointTopic = (state as { topic?: string } | null)?.topic ?? topic;
  ctx.usage({ cost: 0.3 });
  return {
    topic: checkpointTopic,
    findings: [`background on ${checkpointTopic}`, `recent developments in ${checkpointTopic}`],
    analysis,
  };
};

export default researcher;
