/**
 * What the example fact-checker concludes, as a pure function of the step input it receives over A2A: the
 * research it is asked to check, `{ task, steps: { research: { topic, findings, analysis } } }`.
 *
 * The "check" is deliberately simple and deterministic — a claim is supported when it is about the topic — because
 * the demo is about the governed hop, not about fact-checking. The answer is the research it was given, annotated:
 * each finding carries its verdict, so a writer that drafts from it shows the check in the draft.
 */
export type ClaimVerdict = "supported" | "unverified";
export type OverallVerdict = "supported" | "partly supported" | "unsupported" | "nothing to check";
export interface FactCheckResult {
    topic: string;
    verdict: OverallVerdict;
    claims: Array<{
        claim: string;
        verdict: ClaimVerdict;
    }>;
    /** The findings with their verdicts, e.g. `background on tides (supported)`. */
    findings: string[];
    /** The research's analysis, passed on unchanged. */
    analysis?: unknown;
    checkedBy: string;
}
export declare function factCheck(input: unknown, checkedBy?: string): FactCheckResult;
