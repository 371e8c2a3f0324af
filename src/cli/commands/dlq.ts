/**
 * `switchyard dlq list|replay` — entries the bus gave up on (undecodable, or delivered too many times), and foreign
 * hops the coordinator gave up on without re-sending (stream `foreign:KEY`, listed only: src/foreign/dead-letters.ts).
 * Both through AdminService (remote/admin-api.ts).
 */
import type { Command } from "commander";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { intOption } from "../args.js";
import type { ActionRunner } from "../action.js";
import { formatTable, formatTime } from "../output.js";
import { withAdminApi } from "../remote/admin-api.js";

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
        // AdminService.ListDeadLetters checks the stream name and the limit (1 to 10 000).
        const letters = await withAdminApi(ctx, (api) => api.listDeadLetters({ ...(options.stream !== undefined ? { stream: options.stream } : {}), limit: options.limit }));
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
        // Said in the CLI's own flags before asking; the stream name, a foreign stream (never replayed) and the ids
        // are AdminService.ReplayDeadLetters' to check.
        if ((options.id === undefined) === !options.all) {
          throw new SwitchyardError(ErrorCode.InvalidArgument, "name the entries to replay with --id (repeatable) or pass --all", { details: { path: "--id" } });
        }
        const replayed = await withAdminApi(ctx, (api) => api.replayDeadLetters(options.all ? { stream: options.stream, all: true } : { stream: options.stream, ids: options.id! }));
        if (options.json) return ctx.printJson({ stream: options.stream, replayed });
        ctx.print(`replayed ${replayed}`);
      }),
    );
}
