/**
 * Reads a topic sceptically and lists what could be wrong with it. The orchestrator's second specialist (its input
 * is the query payload `{ topic }`); also usable as a workflow step.
 *
 * It takes a moment on purpose: a specialist that answers later than one asked after it is what makes the
 * orchestrator demo's replies arrive in an order other than the order they were asked in.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Handler } from "switchyard/harness";
import { topicOf } from "./topic.js";

const THINKING_MS = 300;

const critic: Handler = async (work, ctx) => {
  const topic = topicOf(work.input);
  // Honour a shutdown while "thinking": an aborted turn is redelivered, not lost.
  await sleep(THINKING_MS, undefined, { signal: ctx.signal });
  ctx.usage({ cost: 0.3, inputTokens: 90, outputTokens: 60 });
  return {
    topic,
    concerns: [`claims about ${topic} that nobody has measured`, `who gains if ${topic} is believed`],
    severity: "minor",
  };
};

export default critic;
