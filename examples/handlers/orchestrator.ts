/**
 * Gathers three views of a topic at once and finishes when every answer is in: a fact-check by the agent outside
 * the perimeter (`foreign:fact-checker`, the one `npm run demo -- orchestrator` starts and registers), a critique
 * (`role:critic`) and an analysis (`role:analyst`).
 *
 * The fan-out pattern (src/harness/types.ts, "Fan-out"): the first turn returns `ctx.delegateAll(...)` and keeps
 * nothing in memory. Each REPLY — ok or error — runs this same handler again, one at a time, in the order the
 * coordinator received them, with the state the previous turn returned and `work.resume.outstanding`, the answers
 * still awaited. A resumed turn notes its reply in that state and returns `ctx.awaitMore(state)` while anything is
 * outstanding; the last one combines what was gathered.
 *
 * Each answer is read in the turn its REPLY wakes (`ctx.readResult(reply.resultRef)`): the REPLY carries its own
 * delegate's output, so that read needs no store, and a harness holds no database (issue 27 §3). What a later turn
 * needs goes into the state.
 *
 * A specialist that fails is noted, not fatal: the orchestrator finishes with what the others answered, and fails
 * only when none did. Returning before `outstanding` is empty would also be allowed — the late replies would be
 * recorded as orphans — but this orchestrator wants every view it asked for.
 */
import type { Handler, HandlerContext, SubQueryRequest } from "switchyard/harness";
import { record, topicOf } from "./topic.js";

/** One resumed turn as the orchestrator saw it: its own account of the fan-in, returned with the output. */
export interface TurnNote {
  turn: number;
  /** The correlation id of the REPLY this turn was handed. */
  took: string;
  /** The delegate step that answered (`<origin>.dN`). */
  from: string;
  status: "ok" | "error";
  /** What was still awaited after this reply. */
  outstanding: string[];
}

/** The checkpoint carried from turn to turn. */
interface Tally {
  topic: string;
  /** Per correlation id: the answer, or why there is none. The state travels with every REPLY (keep answers small). */
  answers: Record<string, { result: unknown } | { error: string }>;
  turns: TurnNote[];
}

/** The claims the orchestrator would make unchecked; the outside agent checks them. */
function claimsAbout(topic: string): string[] {
  return [`background on ${topic}`, `recent developments in ${topic}`, "the consensus has settled"];
}

/**
 * Slowest first (the outside agent answers over A2A, the critic takes its time): the answers then tend to arrive in
 * the reverse of the order asked, which shows that they are taken as they arrive, not as they were listed.
 */
export function questionsAbout(topic: string): SubQueryRequest[] {
  return [
    // `skill` names the A2A skill the agent's card must list; the rest is what the agent checks.
    { to: "foreign:fact-checker", correlationId: "fact-check", payload: { skill: "fact-check", topic, findings: claimsAbout(topic) } },
    { to: "role:critic", correlationId: "critique", payload: { topic } },
    { to: "role:analyst", correlationId: "analysis", payload: { topic } },
  ];
}

const orchestrator: Handler = async (work, ctx) => {
  if (!work.resume) {
    const topic = topicOf(work.input);
    ctx.usage({ cost: 0.2 });
    const tally: Tally = { topic, answers: {}, turns: [] };
    // One marker for the whole fan-out: a second `delegate` in this turn would fail it (one marker per turn).
    return ctx.delegateAll(questionsAbout(topic), { state: tally });
  }

  const { reply, outstanding } = work.resume;
  const previous = work.resume.state as Tally;
  const answer = reply.status === "ok" ? { result: await ctx.readResult(reply.resultRef) } : { error: `${reply.error?.code ?? "ERROR"}: ${reply.error?.message ?? ""}` };
  const tally: Tally = {
    ...previous,
    answers: { ...previous.answers, [reply.correlationId]: answer },
    turns: [...previous.turns, { turn: work.turn, took: reply.correlationId, from: reply.sourceStepId, status: reply.status, outstanding }],
  };
  ctx.logger.info({ took: reply.correlationId, status: reply.status, outstanding }, "took a reply");
  // Anything not in `tally` is gone when this turn stands down: the next REPLY is handed exactly this state.
  if (outstanding.length > 0) return ctx.awaitMore(tally);
  return gathered(tally, ctx);
};

/** The last turn: every reply is in; combine the answers. */
function gathered(tally: Tally, ctx: HandlerContext): unknown {
  const results: Record<string, unknown> = {};
  const failed: Record<string, string> = {};
  for (const [correlationId, answer] of Object.entries(tally.answers)) {
    if ("result" in answer) results[correlationId] = answer.result;
    else failed[correlationId] = answer.error;
  }
  if (Object.keys(results).length === 0) throw new Error(`no specialist answered: ${Object.values(failed).join("; ")}`);
  ctx.usage({ cost: 0.1 });
  const checked = record(results["fact-check"])?.findings;
  const concerns = record(results.critique)?.concerns;
  return {
    topic: tally.topic,
    // What a writer drafts from: the checked claims when the check came back (else the unchecked ones), and the
    // critic's concerns as open points.
    findings: [
      ...(Array.isArray(checked) ? checked.map(String) : claimsAbout(tally.topic)),
      ...(Array.isArray(concerns) ? concerns.map((c) => `open concern: ${String(c)}`) : []),
    ],
    analysis: results.analysis ?? null,
    critique: results.critique ?? null,
    factCheck: results["fact-check"] ?? null,
    failed,
    turns: tally.turns,
  };
}

export default orchestrator;
