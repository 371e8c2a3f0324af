/**
 * Adapts a command implementation `(ctx, ...arguments, options)` to commander's action callback, which passes the
 * positional arguments, the options object and the Command itself (whose global options build the context).
 */
import type { Command } from "commander";
import { CliContext, type CliIo } from "./context.js";

// Commander hands actions untyped values; each action declares the shapes its own arguments and options have.
export type CommandImpl = (ctx: CliContext, ...args: any[]) => Promise<void>;

export type ActionRunner = (impl: CommandImpl) => (...args: unknown[]) => Promise<void>;

export function createActionRunner(io: CliIo): ActionRunner {
  return (impl) =>
    async (...args) => {
      const command = args.at(-1) as Command;
      await impl(await CliContext.of(io, command), ...args.slice(0, -1));
    };
}
