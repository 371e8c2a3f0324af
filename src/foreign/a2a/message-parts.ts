/**
 * The parts of the message a FOREIGN hop sends, chosen from the input modes the agent accepts.
 *
 * Which modes apply: those of the skill the hop uses — the step input's `skill` when it names one the card lists,
 * else the first skill the registry expects of the agent — when that skill lists `inputModes`; else the card's
 * `defaultInputModes`.
 *
 * - No modes at all, or JSON accepted without text (`application/json`, any `…+json`, `application/*`, `*\/*`) →
 *   ONE data part: the input object (non-objects wrapped as `{ value }`), as before.
 * - Text only (text/plain or another text type, no JSON type) → ONE text part: a string input as is; an object with
 *   a string `text` field → that text; anything else → `JSON.stringify(input, null, 2)`.
 * - Both a JSON type and a text type listed → the data part FIRST, then the text part. The spec lets a message carry
 *   several parts, and this is what real agents handle best: agents that read `parts[0]` (most `@a2a-js/sdk`
 *   executors) get the data exactly as before, while servers that read only text parts — `@reactive-agents/a2a`
 *   joins the text parts and ignores data parts, VoltAgent's server takes the first text part — get the text,
 *   although both advertise JSON input. An agent that reads every part sees the input twice; we found none.
 * - Bare part kinds from pre-0.3 cards count too: `text` as text/plain, `data` as JSON.
 * - Modes listing neither (e.g. only images) → the data part; the agent decides, and answers with an error we map.
 */
import type { Part } from "@a2a-js/sdk";
import { isJsonObject } from "./untrusted-json.js";

export interface InputModes {
  defaultInputModes: readonly string[];
  skillInputModes: Readonly<Record<string, readonly string[]>>;
}

/** Which parts a message carries: one data part, one text part, or the data part then the text part. */
export type PartKind = "data" | "text" | "data+text";

/** The modes that apply to a hop using `skill` (undefined: the card's defaults). */
export function modesFor(card: InputModes, skill: string | undefined): readonly string[] {
  const own = skill === undefined ? undefined : card.skillInputModes[skill];
  return own !== undefined && own.length > 0 ? own : card.defaultInputModes;
}

// Cards written to the pre-0.3 drafts (still served by some servers, e.g. VoltAgent's) list the part kinds
// themselves — "text", "data", "file" — instead of media types; they are read as text/plain and application/json.
function acceptsJson(mode: string): boolean {
  return mode === "application/json" || mode.endsWith("+json") || mode === "application/*" || mode === "*/*" || mode === "*" || mode === "data" || mode === "json";
}

function acceptsText(mode: string): boolean {
  return mode === "text/plain" || mode.startsWith("text/") || mode === "text";
}

export function partKindFor(modes: readonly string[]): PartKind {
  const normal = modes.map((m) => m.split(";")[0]!.trim().toLowerCase());
  const json = normal.some(acceptsJson);
  const text = normal.some(acceptsText);
  if (json && text) return "data+text";
  return text ? "text" : "data";
}

/** The text a text-only agent receives for `input`. */
export function inputAsText(input: unknown): string {
  if (typeof input === "string") return input;
  if (isJsonObject(input) && typeof input.text === "string") return input.text;
  return JSON.stringify(input ?? null, null, 2);
}

/** The skill a hop uses: the input's `skill` when the card lists it, else the registry's first skill. */
export function skillOf(input: unknown, registrySkills: readonly string[], cardSkills: readonly string[]): string | undefined {
  const named = isJsonObject(input) ? input.skill : undefined;
  if (typeof named === "string" && cardSkills.includes(named)) return named;
  return registrySkills[0];
}

/** The message parts for `input` given the modes that apply. */
export function messageParts(input: unknown, modes: readonly string[]): Part[] {
  const kind = partKindFor(modes);
  const text: Part = { content: { $case: "text", value: inputAsText(input) }, metadata: undefined, filename: "", mediaType: "text/plain" };
  if (kind === "text") return [text];
  const data: Part = { content: { $case: "data", value: isJsonObject(input) ? input : { value: input ?? null } }, metadata: undefined, filename: "", mediaType: "application/json" };
  return kind === "data+text" ? [data, text] : [data];
}
