import { record, topicOf } from "./topic.js";
/** The claims the orchestrator would make unchecked; the outside agent checks them. */
function claimsAbout(topic) {
    return [`background on ${topic}`, `recent developments in ${topic}`, "the consensus has settled"];
}
/**
 * Slowest first (the outside agent answers over A2A, the critic takes its time): the answers then tend to arrive in
 * the reverse of the order asked, which shows that they are taken as they arrive, not as they were listed.
 */
export function questionsAbout(topic) {
    return [
        // `skill` names the A2A skill the agent's card must list; the rest is what the agent checks.
        { to: "foreign:fact-checker", correlationId: "fact-check", payload: { skill: "fact-check", topic, findings: claimsAbout(topic) } },
        { to: "role:critic", correlationId: "critique", payload: { topic } },
        { to: "role:analyst", correlationId: "analysis", payload: { topic } },
    ];
}
const orchestrator = async (work, ctx) => {
    if (!work.resume) {
        const topic = topicOf(work.input);
        ctx.usage({ cost: 0.2 });
        const tally = { topic, answers: {}, turns: [] };
        // One marker for the whole fan-out: a second `delegate` in this turn would fail it (one marker per turn).
        return ctx.delegateAll(questionsAbout(topic), { state: tally });
    }
    const { reply, outstanding } = work.resume;
    const previous = work.resume.state;
    const answer = reply.status === "ok" ? { ref: reply.resultRef } : { error: `${reply.error?.code ?? "ERROR"}: ${reply.error?.message ?? ""}` };
    const tally = {
        ...previous,
        answers: { ...previous.answers, [reply.correlationId]: answer },
        turns: [...previous.turns, { turn: work.turn, took: reply.correlationId, from: reply.sourceStepId, status: reply.status, outstanding }],
    };
    ctx.logger.info({ took: reply.correlationId, status: reply.status, outstanding }, "took a reply");
    // Anything not in `tally` is gone when this turn stands down: the next REPLY is handed exactly this state.
    if (outstanding.length > 0)
        return ctx.awaitMore(tally);
    return gathered(tally, ctx);
};
/** The last turn: every reply is in; read the answers through this tenant's scope and combine them. */
async function gathered(tally, ctx) {
    const results = {};
    const failed = {};
    for (const [correlationId, answer] of Object.entries(tally.answers)) {
        if ("ref" in answer)
            results[correlationId] = await ctx.readResult(answer.ref);
        else
            failed[correlationId] = answer.error;
    }
    if (Object.keys(results).length === 0)
        throw new Error(`no specialist answered: ${Object.values(failed).join("; ")}`);
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
//# sourceMappingURL=orchestrator.js.map