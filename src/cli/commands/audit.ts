/**
 * `switchyard audit verify|list|checkpoint|checkpoints` — the tenant's hash-chained audit log and its signed
 * checkpoints.
 */
import { writeFile } from "node:fs/promises";
import { resolve as resolvePath } from "node:path";
import type { Command } from "commander";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { inFile, intOption, readInputFile, requireTenant, uuidOption } from "../args.js";
import type { ActionRunner } from "../action.js";
import { CommandExit, type CliContext } from "../context.js";
import { describeVerification, ExitCode, formatTable, formatTime } from "../output.js";
import { TENANT_OPTION_HELP, withTenantApi } from "../remote/session.js";
import { withCheckpointApi } from "../remote/checkpoint-api.js";
import type { AuditRow, Checkpoint, ExportedCheckpoint, VerifyWithCheckpointsResult } from "../remote/tenant-api.js";

export function registerAuditCommands(program: Command, run: ActionRunner): void {
  const audit = program.command("audit").description("verify and read the tenant's audit chain");

  /**
   * `audit verify --tenant T [--checkpoints FILE] [--json]` — recomputes the tenant's chain and checks every
   * signed checkpoint in the table (signature by its key, hash at its seq). With `--checkpoints`, also the
   * checkpoints of an exported file, their signatures against the public keys in the file. Exit 0 when intact;
   * exit 1 when broken, naming the first broken seq (`error: AUDIT_BROKEN: … broken at seq N` on stderr in human
   * form).
   *
   * JSON (printed whatever the outcome; the exit code tells which):
   * `{"tenant":"T","ok":true,"rows":42,"headSeq":42}` or
   * `{"tenant":"T","ok":false,"rows":5,"headSeq":42,"firstBroken":{"seq":5,"reason":"…"}}`, plus
   * `"checkpoints":{"table":3,"file":3,"signedSeq":40}` when there were checkpoints to check or a file was given
   * (`file` only with `--checkpoints`; `signedSeq` is the highest seq a valid checkpoint vouches for).
   */
  audit
    .command("verify")
    .description("recompute the tenant's audit hash chain, check its signed checkpoints, and name the first broken row")
    .option("--tenant <tenant>", TENANT_OPTION_HELP)
    .option("--checkpoints <file>", "also check against an exported checkpoints file (JSON lines)")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; checkpoints?: string; json?: boolean }) => {
        const { parseCheckpointLines } = await import("../remote/tenant-api.js");
        const file = options.checkpoints !== undefined ? await readInputFile(ctx.io.cwd, options.checkpoints) : undefined;
        let fromFile: ExportedCheckpoint[] | undefined;
        try {
          fromFile = file ? parseCheckpointLines(file.text) : undefined;
        } catch (error) {
          throw inFile(file!.path, error);
        }
        const { tenant, result } = await withTenantApi(ctx, options.tenant, (api) =>
          api.verifyAudit(fromFile ? { checkpoints: { parsed: fromFile, text: file!.text, source: options.checkpoints! } } : {}),
        );
        const { checkpoints, ...chain } = result;
        const showCheckpoints = checkpoints.table > 0 || checkpoints.file !== undefined;
        if (options.json) ctx.printJson({ tenant, ...chain, ...(showCheckpoints ? { checkpoints } : {}) });
        else {
          if (showCheckpoints) ctx.print(describeCheckpoints(result, options.checkpoints));
          ctx.print(describeVerification(tenant, chain));
        }
        if (!result.ok) {
          if (!options.json) ctx.note(`error: AUDIT_BROKEN: audit chain of tenant ${tenant} is broken at seq ${result.firstBroken!.seq}`);
          throw new CommandExit(ExitCode.Failed);
        }
      }),
    );

  /**
   * `audit checkpoint --tenant T [--key-file PEM] [--json]` — signs the tenant's chain head now (coordinators do
   * it periodically), after checking the rows since the last checkpoint. Idempotent: an already signed head is
   * reported, not signed again. Exit 1 (AUDIT_BROKEN) when the chain does not verify since the last checkpoint.
   *
   * JSON: `{"tenant":"T","status":"signed"|"unchanged","checkpoint":{"orgId","seq","hash","atMs","kid","signature"}|null}`
   */
  audit
    .command("checkpoint")
    .description("sign the tenant's audit chain head now")
    .requiredOption("--tenant <tenant>", "tenant (org id)")
    .option("--key-file <pem>", "sign with this Ed25519 private key (PKCS#8 PEM) instead of the database-held key")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant: string; keyFile?: string; json?: boolean }) => {
        const tenant = requireTenant(options.tenant);
        // The key file's private key is used here, by the client: only the signature reaches the service.
        const operatorKeyPem = options.keyFile !== undefined ? (await readInputFile(ctx.io.cwd, options.keyFile)).text : undefined;
        const outcome = await withCheckpointApi(ctx, (api) => api.sign(tenant, operatorKeyPem !== undefined ? { operatorKeyPem } : {}));
        if (outcome.status === "refused") {
          throw new SwitchyardError(ErrorCode.AuditBroken, `audit chain of tenant ${tenant} is broken at seq ${outcome.broken.seq}: ${outcome.broken.reason}; nothing was signed`, {
            details: { tenant, firstBroken: outcome.broken },
          });
        }
        const checkpoint = outcome.checkpoint ?? null;
        if (options.json) return ctx.printJson({ tenant, status: outcome.status, checkpoint });
        if (!checkpoint) ctx.print(`tenant ${tenant} has no audit rows to sign`);
        else if (outcome.status === "signed") ctx.print(`signed the audit head of tenant ${tenant} at seq ${checkpoint.seq} with key ${checkpoint.kid}`);
        else ctx.print(`the audit head of tenant ${tenant} at seq ${checkpoint.seq} is already signed (key ${checkpoint.kid})`);
      }),
    );

  registerCheckpointCommands(audit, run);

  /**
   * `audit list --tenant T [--task ID] [--after SEQ] [--limit N] [--json]` — rows in seq order (default limit 100).
   *
   * JSON: `{"rows":[{"orgId":"T","seq":1,"prevHash":"<hex>","hash":"<hex>","action":"dispatch","actor":"coordinator",
   * "destination":"role:researcher","verdict":"allow","rule":"builtin:default","reason":"…","payloadHash":"<hex>|",
   * "cost":2,"taskId":"<uuid>","stepId":"research","envelopeId":"…","atMs":1714557600000}]}`
   */
  audit
    .command("list")
    .description("list audit rows in seq order")
    .option("--tenant <tenant>", TENANT_OPTION_HELP)
    .option("--task <id>", "only this task's rows", uuidOption)
    .option("--after <seq>", "only rows after this seq (paging)", intOption(0))
    .option("--limit <n>", "at most this many rows (1..10000)", intOption(1), 100)
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; task?: string; after?: number; limit: number; json?: boolean }) => {
        const rows = await withTenantApi(ctx, options.tenant, (api) =>
          api.listAudit({
            limit: options.limit,
            ...(options.task !== undefined ? { taskId: options.task } : {}),
            ...(options.after !== undefined ? { afterSeq: options.after } : {}),
          }),
        );
        if (options.json) return ctx.printJson({ rows });
        printAuditRows(ctx, rows);
      }),
    );
}

function printAuditRows(ctx: CliContext, rows: readonly AuditRow[]): void {
  ctx.print(
    formatTable(
      ["seq", "time", "action", "actor", "destination", "verdict", "rule", "cost", "task", "step"],
      rows.map((r) => [r.seq, formatTime(r.atMs), r.action, r.actor, r.destination, r.verdict, r.rule, r.cost, r.taskId, r.stepId]),
    ),
  );
}

function registerCheckpointCommands(audit: Command, run: ActionRunner): void {
  const checkpoints = audit.command("checkpoints").description("list, export and manage signed audit checkpoints");

  /**
   * `audit checkpoints list --tenant T [--json]` — the tenant's checkpoints in seq order.
   *
   * JSON: `{"checkpoints":[{"orgId":"T","seq":1000,"hash":"<hex>","atMs":1714557600000,"kid":"ck_…","signature":"<base64>"}]}`
   */
  checkpoints
    .command("list")
    .description("list the tenant's signed checkpoints")
    .requiredOption("--tenant <tenant>", "tenant (org id)")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant: string; json?: boolean }) => {
        const rows = await withTenantApi(ctx, requireTenant(options.tenant), (api) => api.listCheckpoints());
        if (options.json) return ctx.printJson({ checkpoints: rows });
        printCheckpoints(ctx, rows);
      }),
    );

  /**
   * `audit checkpoints export [--tenant T] [--out FILE]` — every checkpoint (of one tenant, or of all) as JSON
   * lines `{"org_id","seq","hash","at_ms","kid","signature","public_key"}`, to stdout or FILE. Keep the file
   * somewhere the database's writers cannot reach; `audit verify --checkpoints FILE` checks the chain against it.
   * With `--out`, prints `exported N checkpoints to FILE`.
   */
  checkpoints
    .command("export")
    .description("export signed checkpoints as JSON lines for safekeeping")
    .option("--tenant <tenant>", "only this tenant (default: every tenant)")
    .option("--out <file>", "write to this file instead of stdout")
    .action(
      run(async (ctx, options: { tenant?: string; out?: string }) => {
        const tenant = options.tenant !== undefined ? requireTenant(options.tenant) : undefined;
        const text = await withCheckpointApi(ctx, (api) => api.exportCheckpoints(tenant));
        if (options.out === undefined) {
          if (text !== "") ctx.io.stdout.write(text);
          return;
        }
        const path = resolvePath(ctx.io.cwd, options.out);
        try {
          await writeFile(path, text);
        } catch (error) {
          throw new SwitchyardError(ErrorCode.InvalidArgument, `cannot write ${path}: ${(error as Error).message}`, { cause: error, details: { path: "--out" } });
        }
        const count = text === "" ? 0 : text.split("\n").length - 1;
        ctx.print(`exported ${count} checkpoint${count === 1 ? "" : "s"} to ${path}`);
      }),
    );

  /**
   * `audit checkpoints rotate-key [--json]` — retires the active database-held signing key (its private key is
   * erased; its public key stays, so earlier checkpoints keep verifying) and creates a new one.
   *
   * JSON: `{"kid":"ck_…"}`
   */
  checkpoints
    .command("rotate-key")
    .description("retire the checkpoint signing key and create a new one")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { json?: boolean }) => {
        const kid = await withCheckpointApi(ctx, (api) => api.rotateKey());
        if (options.json) return ctx.printJson({ kid });
        ctx.print(`new checkpoint signing key ${kid}; earlier keys are retired and still verify their checkpoints`);
      }),
    );

  /**
   * `audit checkpoints keys [--json]` — the signing keys, newest first.
   *
   * JSON: `{"keys":[{"kid":"ck_…","publicKey":"-----BEGIN PUBLIC KEY-----…","createdAt":"<ISO>","retiredAt":null,"hasPrivateKey":true}]}`
   */
  checkpoints
    .command("keys")
    .description("list the checkpoint signing keys")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { json?: boolean }) => {
        const keys = await withCheckpointApi(ctx, (api) => api.listKeys());
        if (options.json) return ctx.printJson({ keys });
        ctx.print(
          formatTable(
            ["kid", "created", "retired", "private key"],
            keys.map((k) => [k.kid, k.createdAt.toISOString(), k.retiredAt?.toISOString() ?? "", k.hasPrivateKey ? "in database" : "elsewhere / erased"]),
          ),
        );
      }),
    );
}

function printCheckpoints(ctx: CliContext, rows: readonly Checkpoint[]): void {
  ctx.print(formatTable(["seq", "signed", "kid", "hash"], rows.map((c) => [c.seq, formatTime(c.atMs), c.kid, c.hash])));
}

function describeCheckpoints(result: VerifyWithCheckpointsResult, file: string | undefined): string {
  const { table, file: inFileCount, signedSeq } = result.checkpoints;
  const fromFile = file !== undefined ? ` and ${inFileCount ?? 0} in ${file}` : "";
  const vouched = result.ok ? (signedSeq > 0 ? `; signed up to seq ${signedSeq}` : "") : "";
  return `checked ${table} signed checkpoint${table === 1 ? "" : "s"} in the table${fromFile}${vouched}`;
}
