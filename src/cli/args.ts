/**
 * Argument and file readers shared by the commands. Each failure is INVALID_ARGUMENT naming the flag or file,
 * so the CLI exits 2 with a message that says what to fix.
 */
import { readFile } from "node:fs/promises";
import { resolve as resolvePath } from "node:path";
import { InvalidArgumentError } from "commander";
import { ErrorCode, SwitchyardError } from "../errors.js";

/** Commander option parser for a whole number >= min (bad values become a usage error, exit 2). */
export function intOption(min: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min) throw new InvalidArgumentError(`expected a whole number >= ${min}`);
    return n;
  };
}

/** Commander option parser for a positive number of seconds (fractions allowed). */
export function secondsOption(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError("expected a positive number of seconds");
  return n;
}

export function requireTenant(tenant: string | undefined): string {
  const value = tenant?.trim();
  if (!value) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, "--tenant must name a tenant", { details: { path: "--tenant" } });
  }
  return value;
}

/** Parses `--input` text as JSON; the error says where the JSON went wrong. */
export function parseJsonOption(flag: string, text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `${flag} is not valid JSON: ${(error as Error).message}`, {
      details: { path: flag },
    });
  }
}

export interface InputFile {
  /** The absolute path. */
  path: string;
  text: string;
  /** From the extension: `.json` → json, `.yaml`/`.yml` → yaml, otherwise undefined (content decides). */
  format: "json" | "yaml" | undefined;
}

export async function readInputFile(cwd: string, file: string): Promise<InputFile> {
  const path = resolvePath(cwd, file);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = (error as { code?: string }).code;
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a directory" : (error as Error).message;
    throw new SwitchyardError(ErrorCode.InvalidArgument, `cannot read ${path}: ${why}`, { details: { file: path } });
  }
  const format = /\.json$/i.test(path) ? "json" : /\.ya?ml$/i.test(path) ? "yaml" : undefined;
  return { path, text, format };
}

/**
 * Prefixes a validation error with the file it came from (`/x/flow.yaml: steps[1].to: …`), keeping its code
 * and details so the exit code and JSON form stay those of the original error.
 */
export function inFile(path: string, error: unknown): unknown {
  if (!(error instanceof SwitchyardError)) return error;
  return new SwitchyardError(error.code, `${path}: ${error.message}`, { cause: error, details: { ...error.details, file: path } });
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Commander option parser for ids that are UUIDs (task ids, approval ids). */
export function uuidOption(value: string): string {
  if (!UUID_RE.test(value)) throw new InvalidArgumentError("expected a UUID");
  return value.toLowerCase();
}
