/**
 * The fan-out crash test's specialist (roles `fanout-alpha`, `fanout-beta`, `fanout-gamma`, one module for all):
 * answers after a random delay, so replies reach the orchestrator in a different order each task, or fails when
 * the query says it is the task's failing one.
 */
import type { Handler } from "../../../src/harness/index.js";
import { announceLoaded, COST, sleep, type SpecialistAnswer, type SpecialistQuery } from "./workload.js";

const MAX_DELAY_MS = 400;

const specialist: Handler = async (work, ctx) => {
  const query = work.input as SpecialistQuery;
  await sleep(Math.random() * MAX_DELAY_MS);
  if (query.fail) {
    ctx.usage({ cost: COST.specialistFailed });
    throw new Error(`${query.specialist} gives up on task ${query.taskIndex}`);
  }
  ctx.usage({ cost: COST.specialistOk });
  const answer: SpecialistAnswer = { specialist: query.specialist, answer: `${query.specialist} on task ${query.taskIndex}` };
  return answer;
};

announceLoaded();

export default specialist;
