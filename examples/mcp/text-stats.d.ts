export declare const TEXT_STATS_TOOL = "text_stats";
export interface TextStats {
    words: number;
    sentences: number;
    longestWord: string;
    /** At 200 words a minute. */
    readingSeconds: number;
}
export interface RunningTextStats {
    /** The MCP endpoint. */
    url: string;
    /** Texts the tool was called with, in order. */
    received: string[];
    close(): Promise<void>;
}
export declare function textStats(text: string): TextStats;
export declare function startTextStats(options?: {
    host?: string;
    port?: number;
}): Promise<RunningTextStats>;
