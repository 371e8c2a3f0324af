/**
 * A foreign agent's artifacts, normalised to plain JSON output. Artifacts are DATA: they become the step's output
 * and nothing in them is ever read as a destination, a workflow change or an instruction to us.
 *
 * Parts map to JSON values: a data part to its value, a text part to its string, a file part to a small descriptor
 * `{ file: { name?, mediaType?, url?, bytes? } }` — inline bytes are dropped (only their size is kept) and URLs are
 * never fetched. Both dialects are read from their JSON wire form: v1.0 parts are a oneof
 * (`{ text } | { data } | { url } | { raw }`), v0.3 parts carry `kind` (`text` | `data` | `file`).
 */
import { isDeepStrictEqual } from "node:util";
import { isJsonObject, malformed, optionalString, requireId, type JsonObject } from "./untrusted-json.js";
import type { A2ADialect } from "./task-state.js";

export interface ForeignArtifact {
  artifactId: string;
  name?: string;
  /** Each part as JSON, in order. */
  parts: unknown[];
  /** From an artifact update: these parts continue the artifact of the same id rather than replace it. */
  append?: boolean;
  /**
   * Set on a collected artifact assembled from appended chunks. Pushes may arrive out of order, so such an
   * artifact is confirmed with GetTask before the bridge resolves on a status push (bridge-transition.ts).
   */
  chunked?: boolean;
}

export interface ArtifactLimits {
  /** Default 64. */
  maxArtifacts?: number;
  /** Default 64. */
  maxPartsPerArtifact?: number;
}

const DEFAULT_MAX_ARTIFACTS = 64;
const DEFAULT_MAX_PARTS = 64;
const MAX_MESSAGE_CHARS = 2_000;

/** Normalises an artifact list (a task snapshot's `artifacts`); absent means none. */
export function normalizeArtifacts(value: unknown, dialect: A2ADialect, path: string, limits: ArtifactLimits = {}): ForeignArtifact[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw malformed("INVALID_SHAPE", "artifacts must be a list", path);
  const max = limits.maxArtifacts ?? DEFAULT_MAX_ARTIFACTS;
  if (value.length > max) throw malformed("TOO_MANY_ARTIFACTS", `more than ${max} artifacts`, path);
  return value.map((artifact, i) => normalizeArtifact(artifact, dialect, `${path}[${i}]`, limits));
}

export function normalizeArtifact(value: unknown, dialect: A2ADialect, path: string, limits: ArtifactLimits = {}): ForeignArtifact {
  if (!isJsonObject(value)) throw malformed("INVALID_SHAPE", "an artifact must be an object", path);
  const artifactId = requireId(value.artifactId, `${path}.artifactId`, "INVALID_SHAPE", "artifactId");
  const name = optionalString(value.name, `${path}.name`, "artifact name");
  if (!Array.isArray(value.parts)) throw malformed("INVALID_SHAPE", "artifact parts must be a list", `${path}.parts`);
  const maxParts = limits.maxPartsPerArtifact ?? DEFAULT_MAX_PARTS;
  if (value.parts.length > maxParts) throw malformed("TOO_MANY_PARTS", `an artifact has more than ${maxParts} parts`, `${path}.parts`);
  const parts = value.parts.map((part, i) => normalizePart(part, dialect, `${path}.parts[${i}]`));
  return name ? { artifactId, name, parts } : { artifactId, parts };
}

/** One part as a JSON value. Throws INVALID_ARGUMENT (reason INVALID_PART) on a part of neither dialect's shape. */
export function normalizePart(value: unknown, dialect: A2ADialect, path: string): unknown {
  if (!isJsonObject(value)) throw malformed("INVALID_PART", "a part must be an object", path);
  return dialect === "1.0" ? normalizeV1Part(value, path) : normalizeV03Part(value, path);
}

const V1_CONTENT_KEYS = ["text", "data", "url", "raw"] as const;

function normalizeV1Part(part: JsonObject, path: string): unknown {
  const present = V1_CONTENT_KEYS.filter((key) => part[key] !== undefined);
  if (present.length !== 1) throw malformed("INVALID_PART", "a v1.0 part must have exactly one of text, data, url, raw", path);
  const mediaType = optionalString(part.mediaType, `${path}.mediaType`, "mediaType");
  const filename = optionalString(part.filename, `${path}.filename`, "filename");
  switch (present[0]!) {
    case "text":
      if (typeof part.text !== "string") throw malformed("INVALID_PART", "text must be a string", `${path}.text`);
      return part.text;
    case "data":
      return part.data;
    case "url":
      if (typeof part.url !== "string") throw malformed("INVALID_PART", "url must be a string", `${path}.url`);
      return fileDescriptor({ name: filename, mediaType, url: part.url });
    default:
      if (typeof part.raw !== "string") throw malformed("INVALID_PART", "raw must be base64 text", `${path}.raw`);
      return fileDescriptor({ name: filename, mediaType, bytes: base64Length(part.raw) });
  }
}

// The SDK's compat layer wraps non-object v1.0 data as `{ value }` flagged in metadata when it speaks v0.3.
const DATA_PART_COMPAT_FLAG = "data_part_compat";

function normalizeV03Part(part: JsonObject, path: string): unknown {
  switch (part.kind) {
    case "text":
      if (typeof part.text !== "string") throw malformed("INVALID_PART", "text must be a string", `${path}.text`);
      return part.text;
    case "data": {
      if (!isJsonObject(part.data)) throw malformed("INVALID_PART", "a v0.3 data part's data must be an object", `${path}.data`);
      const wrapped = isJsonObject(part.metadata) && part.metadata[DATA_PART_COMPAT_FLAG] === true && "value" in part.data;
      return wrapped ? part.data.value : part.data;
    }
    case "file": {
      const file = part.file;
      if (!isJsonObject(file)) throw malformed("INVALID_PART", "a file part needs a file object", `${path}.file`);
      const name = optionalString(file.name, `${path}.file.name`, "file name");
      const mediaType = optionalString(file.mimeType, `${path}.file.mimeType`, "file mimeType");
      if (typeof file.uri === "string") return fileDescriptor({ name, mediaType, url: file.uri });
      if (typeof file.bytes === "string") return fileDescriptor({ name, mediaType, bytes: base64Length(file.bytes) });
      throw malformed("INVALID_PART", "a file part needs uri or bytes", `${path}.file`);
    }
    default:
      throw malformed("INVALID_PART", `unknown v0.3 part kind ${JSON.stringify(part.kind)}`, `${path}.kind`);
  }
}

function fileDescriptor(file: { name?: string | undefined; mediaType?: string | undefined; url?: string; bytes?: number }): unknown {
  const out: Record<string, unknown> = {};
  if (file.name) out.name = file.name;
  if (file.mediaType) out.mediaType = file.mediaType;
  if (file.url !== undefined) out.url = file.url;
  if (file.bytes !== undefined) out.bytes = file.bytes;
  return { file: out };
}

function base64Length(text: string): number {
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((text.length * 3) / 4) - padding);
}

/** The artifact id a completed task's status message answers under when the task has no artifact. */
export const STATUS_MESSAGE_ARTIFACT = "status-message";

/**
 * For a task that completes with no artifact carrying a part: its status message's parts as one artifact
 * (`status-message`), its answer (bridge-transition.ts uses it only when nothing was collected either); undefined
 * otherwise or when the message has no part we can read. Lenient like messageText: an unreadable message is no answer, not a malformed body.
 */
export function statusMessageArtifact(
  state: string | undefined,
  artifacts: readonly ForeignArtifact[],
  message: unknown,
  dialect: A2ADialect,
  limits: ArtifactLimits = {},
): ForeignArtifact | undefined {
  if (state !== "completed" || artifacts.some((artifact) => artifact.parts.length > 0)) return undefined;
  if (!isJsonObject(message) || !Array.isArray(message.parts) || message.parts.length === 0) return undefined;
  try {
    return normalizeArtifact({ artifactId: STATUS_MESSAGE_ARTIFACT, parts: message.parts }, dialect, "$.status.message", limits);
  } catch {
    return undefined;
  }
}

/**
 * The text of a status message (its text parts joined by newlines, capped at 2,000 characters), for audit reasons
 * and failure messages. Lenient: a message we cannot read yields undefined rather than failing the whole body.
 */
export function messageText(message: unknown, dialect: A2ADialect): string | undefined {
  if (!isJsonObject(message) || !Array.isArray(message.parts)) return undefined;
  const texts: string[] = [];
  for (const part of message.parts) {
    if (!isJsonObject(part)) continue;
    if (typeof part.text === "string" && (dialect === "1.0" || part.kind === "text")) texts.push(part.text);
  }
  if (texts.length === 0) return undefined;
  const text = texts.join("\n");
  return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}…` : text;
}

/**
 * Folds incoming artifacts into those collected so far: a snapshot's or update's artifact replaces the one with the
 * same id, unless it is marked `append`, in which case its parts are added to it. Order of first appearance is kept.
 */
export function mergeArtifacts(collected: readonly ForeignArtifact[], incoming: readonly ForeignArtifact[]): ForeignArtifact[] {
  const byId = new Map(collected.map((artifact) => [artifact.artifactId, artifact]));
  for (const artifact of incoming) {
    const previous = byId.get(artifact.artifactId);
    const { append, chunked: _chunked, ...rest } = artifact;
    if (append && previous) byId.set(artifact.artifactId, { ...previous, parts: [...previous.parts, ...rest.parts], chunked: true });
    // A chunk whose first part has not arrived yet (out of order) starts the artifact, marked as chunked.
    else byId.set(artifact.artifactId, append ? { ...rest, chunked: true } : rest);
  }
  return [...byId.values()];
}

/**
 * The step output for a finished foreign task. Each artifact's parts become its values: its text parts joined with
 * newlines into ONE string (at the place of the first; an agent streaming text in chunks or lines yields the whole
 * text), data parts kept as their values, file parts as `{ file: {…} }` descriptors. Then:
 * - exactly one artifact with exactly one value → that value (the common case: one data part → the object; one or
 *   more text parts → the string);
 * - otherwise → `{ artifacts: [{ artifactId, name?, parts: [values…] }] }` (also for no artifact at all).
 * Parts are stored normalised (normalizePart), where a text part is a JSON string: a data part whose value is a
 * bare string (v1.0 allows it; v0.3 wraps it) is therefore joined like text.
 */
export function foreignOutput(artifacts: readonly ForeignArtifact[]): unknown {
  const shaped = artifacts.map(({ append: _append, chunked: _chunked, ...artifact }) => ({ ...artifact, parts: artifactValues(artifact.parts) }));
  if (shaped.length === 1 && shaped[0]!.parts.length === 1) return shaped[0]!.parts[0];
  return { artifacts: shaped };
}

/**
 * An artifact's values: its text parts concatenated, as they were sent, into one string where the first one was
 * (a streamed text arrives as appended chunks that carry their own spacing, so no separator is invented); everything
 * else in order.
 */
export function artifactValues(parts: readonly unknown[]): unknown[] {
  const texts = parts.filter((part): part is string => typeof part === "string");
  if (texts.length <= 1) return [...parts];
  const out: unknown[] = [];
  let placed = false;
  for (const part of parts) {
    if (typeof part !== "string") out.push(part);
    else if (!placed) {
      out.push(texts.join(""));
      placed = true;
    }
  }
  return out;
}

/**
 * Whether `incoming` tells nothing beyond `collected` (used for pushes that arrive after a bridge resolved): an
 * artifact already there whole, or an appended chunk whose parts already appear, in order, in the artifact of its id.
 */
export function artifactKnown(collected: readonly ForeignArtifact[], incoming: ForeignArtifact): boolean {
  const known = collected.find((a) => a.artifactId === incoming.artifactId);
  if (!known) return false;
  // Deep equality ignores key order: collected artifacts read back from jsonb have their keys reordered.
  const parts = incoming.parts;
  const have = known.parts;
  if (!incoming.append) return parts.length === have.length && parts.every((p, i) => isDeepStrictEqual(p, have[i]));
  if (parts.length === 0) return true;
  for (let start = 0; start + parts.length <= have.length; start++) {
    if (parts.every((p, i) => isDeepStrictEqual(p, have[start + i]))) return true;
  }
  return false;
}
