/** The no-op handler of (a), (e) and the harness process: like BullMQ's `async () => {}`, it returns nothing. */
import type { Handler } from "../../src/harness/index.js";

export const noopHandler: Handler = async () => undefined;
