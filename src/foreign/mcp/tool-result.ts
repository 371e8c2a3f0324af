/**
 * An MCP `tools/call` result as a foreign observation, so it resolves the bridge like an A2A task's end would.
 *
 * - `isError: true` → state `failed`, the text content (joined) as the message.
 * - otherwise → `completed`, `complete: true`, ONE artifact `result` whose parts are `structuredContent` (one data
 *   part) when present, else each content item: text → its string; image/audio → `{ image|audio: { mediaType, bytes } }`
 *   (inline base64 dropped, its size kept); a resource link → `{ resource: { uri, name?, mediaType? } }`; an embedded
 *   resource → `{ resource: { uri, mediaType?, text? | bytes? } }`. Resources are never fetched.
 *   A single part is then the step's output as is (artifacts.ts `foreignOutput`).
 * - usage from `_meta` as pricing.ts reads any agent's metadata (`_meta.usage` and its aliases, `cost`,
 *   `inputTokens`/`input_tokens`/…), or from `_meta` itself when it carries the figures directly; implausible or
 *   malformed figures are ignored, never an error.
 */
import type { ForeignArtifact } from "../a2a/artifacts.js";
import type { ForeignObservation, ForeignUsage } from "../bridge-transition.js";
import { usageFrom } from "../pricing.js";

/** The fields of a CallToolResult we read (the SDK's schema has already validated the shape). */
export interface ToolResultLike {
  content?: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
  _meta?: unknown;
}

export function observationOf(foreignTaskId: string, result: ToolResultLike): ForeignObservation {
  const usage = usageOf(result._meta);
  const withUsage = usage ? { usage } : {};
  const content = Array.isArray(result.content) ? result.content : [];
  if (result.isError === true) {
    const text = content.map(textOf).filter((t): t is string => t !== undefined).join("\n").slice(0, 2_000);
    return { foreignTaskId, state: "failed", artifacts: [], complete: true, message: text || "the tool reported an error", ...withUsage };
  }
  const parts = result.structuredContent !== undefined && result.structuredContent !== null ? [result.structuredContent] : content.map(partOf);
  const artifact: ForeignArtifact = { artifactId: "result", parts };
  return { foreignTaskId, state: "completed", artifacts: [artifact], complete: true, ...withUsage };
}

function textOf(item: unknown): string | undefined {
  const o = asObject(item);
  return o && o.type === "text" && typeof o.text === "string" ? o.text : undefined;
}

function partOf(item: unknown): unknown {
  const o = asObject(item);
  if (!o) return item;
  switch (o.type) {
    case "text":
      return typeof o.text === "string" ? o.text : "";
    case "image":
    case "audio":
      return { [o.type]: compact({ mediaType: str(o.mimeType), bytes: base64Length(o.data) }) };
    case "resource_link":
      return { resource: compact({ uri: str(o.uri), name: str(o.name), mediaType: str(o.mimeType) }) };
    case "resource": {
      const r = asObject(o.resource) ?? {};
      return { resource: compact({ uri: str(r.uri), mediaType: str(r.mimeType), text: str(r.text), bytes: base64Length(r.blob) }) };
    }
    default:
      return { [String(o.type ?? "unknown")]: {} };
  }
}

export function usageOf(meta: unknown): ForeignUsage | undefined {
  return usageFrom(meta) ?? usageFrom({ usage: meta });
}

function asObject(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

function base64Length(v: unknown): number | undefined {
  if (typeof v !== "string") return undefined;
  const padding = v.endsWith("==") ? 2 : v.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((v.length * 3) / 4) - padding);
}

function compact(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
