/**
 * `switchyard dlq list|replay` — entries the bus gave up on (undecodable, or delivered too many times), and foreign
 * hops the coordinator gave up on without re-sending (stream `foreign:KEY`, listed only: src/foreign/dead-letters.ts).
 */
import type { Command } from "commander";
import type { DeadLetterView } from "../../bus/dead-letters.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { intOption } from "../args.js";
import type { ActionRunner } from "../action.js";
import { formatTable, formatTime } from "../output.js";

export function registerDlqCommands(program: Command, run: ActionRunner): void {
  const dlq = program.command("dlq").description("inspect and replay dead letters");

  /**
   * `dlq list [--stream S] [--limit N] [--json]` — without `--stream`, every dead-letter stream under the key
   * prefix is found (SCAN of `${prefix}{*}:dead`) and listed, oldest first per stream, up to N each (default 100),
   * then the foreign hops not re-sent (`foreign:KEY`, id = the bridge id, reason FOREIGN_NOT_RETRIED: …), up to N.
   *
   * JSON: `{"deadLetters":[{"stream":"role:writer","id":"<entry id>","originalId":"<entry id>","reason":"…",
   * "deliveries":5,"atMs":1714557600000,"bytes":312,
   * "envelope":{"id":"…","kind":"WORK","orgId":"T","taskId":"<uuid>","stepId":"draft"}|null}]}`
   */
  dlq
    .command("list")
    .description("list dead letters (default: of every stream)")
    .option("--stream <stream>", "only this stream, e.g. role:writer or coordinator")
    .option("--limit <n>", "at most this many per stream", intOption(1), 100)
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { stream?: string; limit: number; json?: boolean }) => {
        const { deadLetterView, findDeadLetterStreams } = await import("../../bus/dead-letters.js");
        const { assertStreamName } = await import("../../bus/keys.js");
        const { isForeignStream, listForeignDeadLetters } = await import("../../foreign/dead-letters.js");
        if (options.stream !== undefined) assertStreamName(options.stream);
        const letters = await ctx.withRuntime(
          async (runtime) => {
            const streams = options.stream !== undefined ? [options.stream] : await findDeadLetterStreams(runtime.redis, ctx.config.bus.keyPrefix);
            const views: DeadLetterView[] = [];
            for (const stream of streams) {
              for (const letter of await runtime.bus.listDeadLetters(stream, options.limit)) views.push(deadLetterView(letter, ctx.config.bus.maxPayloadBytes));
            }
            if (options.stream === undefined || isForeignStream(options.stream)) {
              views.push(...(await listForeignDeadLetters(runtime.pool, { ...(options.stream !== undefined ? { stream: options.stream } : {}), limit: options.limit })));
            }
            return views;
          },
          { checks: false },
        );
        if (options.json) return ctx.printJson({ deadLetters: letters });
        ctx.print(
          formatTable(
            ["stream", "id", "deliveries", "at", "envelope", "reason"],
            letters.map((l) => [l.stream, l.id, l.deliveries, formatTime(l.atMs), l.envelope ? `${l.envelope.kind} ${l.envelope.orgId}/${l.envelope.taskId}/${l.envelope.stepId}` : "(undecodable)", l.reason]),
          ),
        );
      }),
    );

  /**
   * `dlq replay --stream S (--id ID… | --all) [--json]` — puts dead letters back on their stream (consumers see
   * them again) and removes them from the dead-letter stream. Prints `replayed N`.
   *
   * JSON: `{"stream":"role:writer","replayed":3}`
   */
  dlq
    .command("replay")
    .description("put dead letters back on their stream")
    .requiredOption("--stream <stream>", "the stream whose dead letters to replay")
    .option("--id <ids...>", "dead-letter entry ids (several may follow one --id, or repeat it)")
    .option("--all", "replay every dead letter of the stream")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { stream: string; id?: string[]; all?: boolean; json?: boolean }) => {
        const { replayAllDeadLetters } = await import("../../bus/dead-letters.js");
        const { assertStreamName } = await import("../../bus/keys.js");
        const { refuseForeignReplay } = await import("../../foreign/dead-letters.js");
        assertStreamName(options.stream);
        refuseForeignReplay(options.stream);
        if ((options.id === undefined) === !options.all) {
          throw new SwitchyardError(ErrorCode.InvalidArgument, "name the entries to replay with --id (repeatable) or pass --all", { details: { path: "--id" } });
        }
        const replayed = await ctx.withRuntime((runtime) => (options.all ? replayAllDeadLetters(runtime.bus, options.stream) : runtime.bus.replayDeadLetters(options.stream, options.id!)), {
          checks: false,
        });
        if (options.json) return ctx.printJson({ stream: options.stream, replayed });
        ctx.print(`replayed ${replayed}`);
      }),
    );
}
