/**
 * What the example fact-checker concludes, as a pure function of the step input it receives over A2A: the
 * research it is asked to check, `{ task, steps: { research: { topic, findings, analysis } } }`.
 *
 * The "check" is deliberately simple and deterministic — a claim is supported when it is about the topic — because
 * the demo is about the governed hop, not about fact-checking. The answer is the research it was given, annotated:
 * each finding carries its verdict, so a writer that drafts from it shows the check in the draft.
 */
export function factCheck(input, checkedBy = "fact-checker") {
    const research = researchIn(input);
    const topic = typeof research.topic === "string" && research.topic !== "" ? research.topic : topicIn(input);
    const findings = Array.isArray(research.findings) ? research.findings.map(String) : [];
    const claims = findings.map((claim) => ({
        claim,
        verdict: (claim.toLowerCase().includes(topic.toLowerCase()) ? "supported" : "unverified"),
    }));
    const supported = claims.filter((c) => c.verdict === "supported").length;
    const verdict = claims.length === 0 ? "nothing to check" : supported === claims.length ? "supported" : supported === 0 ? "unsupported" : "partly supported";
    return {
        topic,
        verdict,
        claims,
        findings: claims.map((c) => `${c.claim} (${c.verdict})`),
        ...(research.analysis !== undefined ? { analysis: research.analysis } : {}),
        checkedBy,
    };
}
function record(value) {
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined;
}
/** The needed step named `research`, else the first needed step with findings, else the input itself. */
function researchIn(input) {
    const steps = record(record(input)?.steps) ?? {};
    const named = record(steps.research);
    if (named)
        return named;
    for (const output of Object.values(steps)) {
        const candidate = record(output);
        if (candidate && "findings" in candidate)
            return candidate;
    }
    return record(input) ?? {};
}
function topicIn(input) {
    const task = record(input)?.task;
    const topic = typeof task === "string" ? task : record(task)?.topic;
    return typeof topic === "string" && topic !== "" ? topic : "an unnamed topic";
}
//# sourceMappingURL=fact-check.js.map