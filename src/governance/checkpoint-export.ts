/**
 * The exported checkpoints file — pure, so the CLI reads a file (`audit verify --checkpoints`) without the parts
 * that reach the database. JSON lines, one per checkpoint, carrying the public key so a copy kept elsewhere can be
 * checked without trusting the database's key table:
 * `{"org_id","seq","hash","at_ms","kid","signature","public_key"}` (public_key: SPKI PEM).
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import { CHECKPOINT_HASH_RE, type Checkpoint } from "./checkpoint-signing.js";

/** One line of an exported checkpoints file, parsed. */
export interface ExportedCheckpoint extends Checkpoint {
  /** SPKI PEM of the key that signed it, as exported. */
  publicKey: string;
  /** 1-based line in the file, for messages. */
  line?: number;
}

/** One line of the file, newline included. */
export function exportLine(c: Checkpoint & { publicKey: string }): string {
  return `${JSON.stringify({ org_id: c.orgId, seq: c.seq, hash: c.hash, at_ms: c.atMs, kid: c.kid, signature: c.signature, public_key: c.publicKey })}\n`;
}

/** Parses an exported checkpoints file. Throws INVALID_ARGUMENT naming the line and field of the first bad line. */
export function parseCheckpointLines(text: string): ExportedCheckpoint[] {
  const parsed: ExportedCheckpoint[] = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new SwitchyardError(ErrorCode.InvalidArgument, `checkpoints line ${line} is not JSON: ${(error as Error).message}`, { details: { path: `line ${line}` } });
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new SwitchyardError(ErrorCode.InvalidArgument, `checkpoints line ${line} must be a JSON object`, { details: { path: `line ${line}` } });
    }
    const o = value as Record<string, unknown>;
    const field = <T>(name: string, ok: (v: unknown) => boolean, what: string): T => {
      if (!ok(o[name])) throw new SwitchyardError(ErrorCode.InvalidArgument, `checkpoints line ${line}: ${name} must be ${what}`, { details: { path: `line ${line}.${name}` } });
      return o[name] as T;
    };
    const nonEmpty = (v: unknown) => typeof v === "string" && v !== "";
    parsed.push({
      orgId: field<string>("org_id", nonEmpty, "a non-empty string"),
      seq: field<number>("seq", (v) => Number.isSafeInteger(v) && (v as number) >= 1, "a whole number >= 1"),
      hash: field<string>("hash", (v) => typeof v === "string" && CHECKPOINT_HASH_RE.test(v), "64 lowercase hex digits"),
      atMs: field<number>("at_ms", (v) => Number.isSafeInteger(v) && (v as number) >= 0, "a whole number >= 0"),
      kid: field<string>("kid", nonEmpty, "a non-empty string"),
      signature: field<string>("signature", nonEmpty, "a base64 string"),
      publicKey: field<string>("public_key", nonEmpty, "a PEM public key"),
      line,
    });
  });
  return parsed;
}
