/**
 * Analyses a topic. Reached by delegation from the researcher (its input is the query payload `{ topic }`) or as
 * a workflow step (input `{ task, steps }`).
 */
import type { Handler } from "switchyard/harness";
import { topicOf } from "./topic.js";

const analyst: Handler = (work, ctx) => {
  const topic = topicOf(work.input);
  ctx.usage({ cost: 0.5, inputTokens: 120, outputTokens: 80 });
  ctx.logger.info({ topic }, "analysing");
  return {
    topic,
    summary: `${topic} is worth a closer look`,
    confidence: 0.8,
    points: [`what ${topic} is`, `why ${topic} matters now`, `open questions about ${topic}`],
  };
};

export default analyst;
