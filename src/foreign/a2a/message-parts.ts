/**
 * The parts of the message a FOREIGN hop sends, chosen from the input modes the agent accepts.
 *
 * Which modes apply: those of the skill the hop uses — the step input's `skill` when it names one the card lists,
 * else the first skill the registry expects of the agent — when that skill lists `inputModes`; else the card's
 * `defaultInputModes`.
 *
 * - JSON accepted (`application/json`, any `…+json`, `application/*` or `*\/*` listed), or no modes at all → ONE
 *   data part: the input object (non-objects wrapped as `{ value }`), as before.
 * - Text only (text/plain or another text type listed, no JSON type) → ONE text part: a string input as is; an
 *   object with a string `text` field → that text; anything else → `JSON.stringify(input, null, 2)`.
 * - Bare part kinds from pre-0.3 cards count too: `text` as text/plain, `data` as JSON.
 * - Modes listing neither (e.g. only images) → the data part; the agent decides, and answers with an error we map.
 *
 * When both are listed we send only the data part, not a data part plus a text copy: the spec lets a message carry
 * several parts, but agents commonly read their first part (or all text parts joined) as THE request, so a second
 * rendering of the same input is read twice or read instead of the data. One part says it once.
 */
import type { Part } from "@a2a-js/sdk";
import { isJsonObject } from "./untrusted-json.js";

export interface InputModes {
  defaultInputModes: readonly string[];
  skillInputModes: Readonly<Record<string, readonly string[]>>;
}

export type PartKind = "data" | "text";

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
  if (normal.length === 0 || normal.some(acceptsJson)) return "data";
  return normal.some(acceptsText) ? "text" : "data";
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
  if (partKindFor(modes) === "text") {
    return [{ content: { $case: "text", value: inputAsText(input) }, metadata: undefined, filename: "", mediaType: "text/plain" }];
  }
  const data = isJsonObject(input) ? input : { value: input ?? null };
  return [{ content: { $case: "data", value: data }, metadata: undefined, filename: "", mediaType: "application/json" }];
}
