/**
 * How the CLI speaks: exit codes, the error line, JSON output and small text tables. Every command prints
 * through these helpers so the human and `--json` forms stay uniform.
 *
 * Exit codes: 0 ok; 1 the operation failed (task failed, chain broken, not found, a service unavailable);
 * 2 the invocation was wrong (usage, validation of an argument, a file or the configuration); 130 interrupted.
 *
 * Errors print `error: CODE: message` on stderr. With `--json` they print one line on stdout instead,
 * `{"error":{"code":"…","message":"…","details":{…}}}`, so a script reads a single channel.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { VerifyChainResult } from "../governance/audit-verify.js";

export const ExitCode = { Ok: 0, Failed: 1, Usage: 2, Interrupted: 130 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** Codes that mean "you asked wrongly" rather than "it did not work". */
const USAGE_CODES: ReadonlySet<string> = new Set([
  ErrorCode.InvalidArgument,
  ErrorCode.InvalidWorkflow,
  ErrorCode.InvalidPolicy,
  ErrorCode.Config,
  ErrorCode.PayloadTooLarge,
]);

export function exitCodeFor(error: SwitchyardError): ExitCode {
  if (error.code === ErrorCode.Cancelled && error.details.interrupted === true) return ExitCode.Interrupted;
  return USAGE_CODES.has(error.code) ? ExitCode.Usage : ExitCode.Failed;
}

/** Network codes of Node sockets; a CLI user wants "cannot reach X", not INTERNAL. */
const UNREACHABLE = new Set(["ECONNREFUSED", "ENOTFOUND", "ETIMEDOUT", "EHOSTUNREACH", "ECONNRESET", "EAI_AGAIN"]);

/** Normalises anything thrown by a command into a SwitchyardError with a useful message. */
export function toCliError(reason: unknown): SwitchyardError {
  if (reason instanceof SwitchyardError) return reason;
  const error = reason as { code?: unknown; message?: unknown; errors?: unknown[] } | undefined;
  // pg reports "connect to every resolved address failed" as an AggregateError with an empty message.
  const inner = Array.isArray(error?.errors) && error.errors.length > 0 ? (error.errors[0] as { code?: unknown; message?: unknown }) : undefined;
  const code = typeof error?.code === "string" ? error.code : typeof inner?.code === "string" ? inner.code : undefined;
  const message = (typeof error?.message === "string" && error.message) || (typeof inner?.message === "string" && inner.message) || String(reason);
  if (code && UNREACHABLE.has(code)) {
    return new SwitchyardError(ErrorCode.Unavailable, `cannot connect: ${message}`, { cause: reason, details: { cause: code } });
  }
  // ioredis rejects pending commands this way when it gives up on a connection it could not make.
  if (message === "Connection is closed.") {
    return new SwitchyardError(ErrorCode.Unavailable, "cannot connect to Redis: the connection is closed", { cause: reason });
  }
  // Postgres: 3D000 invalid_catalog_name (database missing), 42P01 undefined_table (schema missing).
  if (code === "3D000" || code === "42P01") {
    return new SwitchyardError(ErrorCode.FailedPrecondition, `${message}; run \`switchyard migrate\` first`, { cause: reason, details: { cause: code } });
  }
  return SwitchyardError.from(reason);
}

export function formatErrorLine(error: SwitchyardError): string {
  return `error: ${error.code}: ${error.message}`;
}

export function formatErrorJson(error: SwitchyardError): string {
  return JSON.stringify({ error: { code: error.code, message: error.message, details: jsonSafe(error.details) } });
}

/** Drops values JSON cannot carry (causes, functions) from error details. */
function jsonSafe(details: Record<string, unknown>): Record<string, unknown> {
  try {
    return JSON.parse(JSON.stringify(details)) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** One JSON document on one line: the stable machine form every `--json` prints. */
export function jsonLine(value: unknown): string {
  return JSON.stringify(value);
}

export type Cell = string | number | boolean | null | undefined;

/**
 * A plain text table: headers, then rows, columns padded to the widest cell. Numbers align right.
 * An empty table prints the headers and `(none)`.
 */
export function formatTable(headers: readonly string[], rows: ReadonlyArray<readonly Cell[]>): string {
  const text = rows.map((row) => headers.map((_, i) => cellText(row[i])));
  const numeric = headers.map((_, i) => rows.length > 0 && rows.every((row) => typeof row[i] === "number" || row[i] == null));
  const widths = headers.map((h, i) => Math.max(h.length, ...text.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  const out = [line(headers.map((h) => h.toUpperCase())), ...text.map(line)];
  if (rows.length === 0) out.push("(none)");
  return out.join("\n");
}

function cellText(value: Cell): string {
  if (value === null || value === undefined) return "-";
  if (typeof value === "number") return formatNumber(value);
  return String(value);
}

/** Costs and other fractional numbers: at most 4 decimals, no trailing zeros. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  return Number.isInteger(value) ? String(value) : String(Number(value.toFixed(4)));
}

/** `2024-05-01T10:00:00.000Z` → `2024-05-01 10:00:00Z`: short enough for a table column. */
export function formatTime(value: string | number | Date | null | undefined): string {
  if (value === null || value === undefined) return "-";
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toISOString().replace("T", " ").replace(/\.\d{3}Z$/, "Z");
}

/** One sentence on an audit chain verification, naming the first broken seq when there is one. */
export function describeVerification(tenant: string, result: VerifyChainResult): string {
  if (result.ok) return `audit chain of tenant ${tenant} is intact: ${result.rows} rows verified, head at seq ${result.headSeq}`;
  const broken = result.firstBroken!;
  return `audit chain of tenant ${tenant} is BROKEN at seq ${broken.seq}: ${broken.reason} (${result.rows} rows checked, head at seq ${result.headSeq})`;
}
