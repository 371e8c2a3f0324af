/**
 * Gathers three views of a topic at once and finishes when every answer is in: a fact-check by the agent outside
 * the perimeter (`foreign:fact-checker`, the one `npm run demo -- orchestrator` starts and registers), a critique
 * (`role:critic`) and an analysis (`role:analyst`).
 *
 * The fan-out pattern (src/harness/types.ts, "Fan-out"): the first turn returns `ctx.delegateAll(...)` and keeps
 * nothing in memory. Each REPLY — ok or error — runs this same handler again, one at a time, in the order the
 * coordinator received them, with the state the previous turn returned and `work.resume.outstanding`, the answers
 * still awaited. A resumed turn notes its reply in that state and returns `ctx.awaitMore(state)` while anything is
 * outstanding; the last one reads what was gathered through `ctx.readResult`.
 *
 * A specialist that fails is noted, not fatal: the orchestrator finishes with what the others answered, and fails
 * only when none did. Returning before `outstanding` is empty would also be allowed — the late replies would be
 * recorded as orphans — but this orchestrator wants every view it asked for.
 */
import type { Handler, SubQueryRequest } from "../../src/harness/index.js";
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
/**
 * Slowest first (the outside agent answers over A2A, the critic takes its time): the answers then tend to arrive in
 * the reverse of the order asked, which shows that they are taken as they arrive, not as they were listed.
 */
export declare function questionsAbout(topic: string): SubQueryRequest[];
declare const orchestrator: Handler;
export default orchestrator;
