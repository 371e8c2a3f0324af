export declare const FACT_CHECK_SKILL = "fact-check";
export interface FactCheckerOptions {
    /** @defaultValue "127.0.0.1" */
    host?: string;
    /** 0 picks a free port. @defaultValue 0 */
    port?: number;
    /** The card's name, also recorded as `checkedBy`. @defaultValue "fact-checker" */
    name?: string;
    /** Pause before each event after the first, so the pushes arrive as separate updates (ms). @defaultValue 20 */
    stepDelayMs?: number;
    /** Told about each push that failed (not retried; the receiver's sweep polls for what it missed). */
    onPushError?: (error: unknown, taskId: string) => void;
}
export interface RunningFactChecker {
    /** Register this as the agent's base URL, e.g. `http://127.0.0.1:41234`. */
    readonly baseUrl: string;
    readonly cardUrl: string;
    /** How many tasks it has been sent. */
    tasksReceived(): number;
    /** Stops listening and abandons unfinished work; idempotent. */
    close(): Promise<void>;
}
export declare function startFactChecker(options?: FactCheckerOptions): Promise<RunningFactChecker>;
