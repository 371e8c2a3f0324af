/**
 * Reading an Agent Card (untrusted JSON) into the few facts dispatch needs: skills, push support, the JSON-RPC
 * endpoint for each A2A dialect the agent speaks, the input modes (card defaults and per skill; message-parts.ts
 * picks the part kind from them) and the security requirements (card-security.ts).
 *
 * How the dialects are decided (JSON-RPC binding only; gRPC and HTTP+JSON interfaces are ignored):
 * - v1.0 cards list `supportedInterfaces[]`, each with `protocolBinding`, `url` and `protocolVersion`. An entry
 *   with binding `JSONRPC` (any case) and version `1.x` is a v1.0 endpoint; version in [0.3, 1.0) — or empty, which
 *   the spec reads as 0.3 — is a v0.3 endpoint. The first entry per dialect wins (the list is in preference order).
 * - v0.3 cards have no `supportedInterfaces`; they carry a card-level `protocolVersion` (absent = 0.3), a main
 *   `url` whose transport is `preferredTransport` (default JSONRPC) and `additionalInterfaces[]` of
 *   `{ url, transport }`. When the card-level version is in [0.3, 1.0), the main url (if JSONRPC) or else the first
 *   JSONRPC additional interface is the v0.3 endpoint.
 * - Superset cards (the JS SDK's v0.3 card embeds the v1.0 `supportedInterfaces`) are read both ways and united,
 *   `supportedInterfaces` winning where both name an endpoint.
 * - Versions below 0.3 (e.g. 0.2.x) or above 1.x are not spoken. Relative interface URLs are resolved against the
 *   card URL; non-http(s) URLs and URLs with credentials are ignored. Where an endpoint's host may be reached is not
 *   decided here: every call goes through the guarded fetch and its allowlist.
 */
import { isJsonObject, malformed, type JsonObject } from "./untrusted-json.js";
import type { A2ADialect } from "./task-state.js";
import { readCardSecurity, type CardSecurity } from "./card-security.js";

export interface AgentEndpoint {
  url: string;
  /** The interface's `tenant` (v1.0), sent by the SDK with every call when non-empty. */
  tenant?: string;
}

export interface ParsedAgentCard {
  name: string;
  skills: string[];
  pushNotifications: boolean;
  /** JSON-RPC endpoints by dialect; empty when the agent speaks neither dialect over JSON-RPC. */
  endpoints: Partial<Record<A2ADialect, AgentEndpoint>>;
  /** `defaultInputModes` (media types); empty when absent. */
  defaultInputModes: string[];
  /** Each skill's own `inputModes`, only for skills that list some (they override the defaults). */
  skillInputModes: Record<string, string[]>;
  security: CardSecurity;
}

const MAX_SKILLS = 500;
const MAX_SKILL_ID_CHARS = 200;
const MAX_INTERFACES = 50;
const MAX_NAME_CHARS = 500;
const MAX_MODES = 50;
const MAX_MODE_CHARS = 200;

/** Throws INVALID_ARGUMENT (reason INVALID_CARD, with `details.path`) when the card is not a usable Agent Card. */
export function parseAgentCard(raw: unknown, cardUrl: string): ParsedAgentCard {
  if (!isJsonObject(raw)) throw invalid("the Agent Card must be a JSON object", "$");
  const name = raw.name === undefined ? "" : raw.name;
  if (typeof name !== "string" || name.length > MAX_NAME_CHARS) throw invalid(`name must be a string of at most ${MAX_NAME_CHARS} characters`, "$.name");
  const endpoints: Partial<Record<A2ADialect, AgentEndpoint>> = {};
  readSupportedInterfaces(raw, cardUrl, endpoints);
  readV03Endpoints(raw, cardUrl, endpoints);
  return {
    name,
    skills: readSkills(raw.skills),
    pushNotifications: readPush(raw.capabilities),
    endpoints,
    defaultInputModes: readModes(raw.defaultInputModes),
    skillInputModes: readSkillModes(raw.skills),
    security: readCardSecurity(raw),
  };
}

/** Media types; lenient (modes only choose the part kind): non-strings and oversize entries are dropped. */
function readModes(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value
    .slice(0, MAX_MODES)
    .filter((mode): mode is string => typeof mode === "string" && mode !== "" && mode.length <= MAX_MODE_CHARS)
    .map((mode) => mode.trim().toLowerCase());
}

function readSkillModes(value: unknown): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (!Array.isArray(value)) return out;
  for (const skill of value) {
    if (!isJsonObject(skill) || typeof skill.id !== "string") continue;
    const modes = readModes(skill.inputModes);
    if (modes.length > 0 && out[skill.id] === undefined) out[skill.id] = modes;
  }
  return out;
}

function invalid(message: string, path: string) {
  return malformed("INVALID_CARD", `invalid Agent Card: ${message}`, path);
}

function readSkills(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalid("skills must be a list", "$.skills");
  if (value.length > MAX_SKILLS) throw invalid(`more than ${MAX_SKILLS} skills`, "$.skills");
  return value.map((skill, i) => {
    const id = isJsonObject(skill) ? skill.id : undefined;
    if (typeof id !== "string" || id === "" || id.length > MAX_SKILL_ID_CHARS) {
      throw invalid(`every skill needs an id of 1 to ${MAX_SKILL_ID_CHARS} characters`, `$.skills[${i}].id`);
    }
    return id;
  });
}

function readPush(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (!isJsonObject(value)) throw invalid("capabilities must be an object", "$.capabilities");
  const push = value.pushNotifications;
  if (push !== undefined && push !== null && typeof push !== "boolean") throw invalid("capabilities.pushNotifications must be a boolean", "$.capabilities.pushNotifications");
  // Only an explicit true counts: a card that does not say it can push is polled (a2a-transport.ts deliveryFor),
  // and refused only when the registry forces push delivery.
  return push === true;
}

function readSupportedInterfaces(card: JsonObject, cardUrl: string, endpoints: Partial<Record<A2ADialect, AgentEndpoint>>): void {
  const list = card.supportedInterfaces;
  if (list === undefined || list === null) return;
  if (!Array.isArray(list)) throw invalid("supportedInterfaces must be a list", "$.supportedInterfaces");
  if (list.length > MAX_INTERFACES) throw invalid(`more than ${MAX_INTERFACES} interfaces`, "$.supportedInterfaces");
  list.forEach((entry, i) => {
    const path = `$.supportedInterfaces[${i}]`;
    if (!isJsonObject(entry)) throw invalid("an interface must be an object", path);
    const { protocolBinding, url, protocolVersion, tenant } = entry;
    if (typeof protocolBinding !== "string" || typeof url !== "string") throw invalid("an interface needs protocolBinding and url strings", path);
    if (protocolVersion !== undefined && protocolVersion !== null && typeof protocolVersion !== "string") throw invalid("protocolVersion must be a string", `${path}.protocolVersion`);
    if (tenant !== undefined && tenant !== null && typeof tenant !== "string") throw invalid("tenant must be a string", `${path}.tenant`);
    if (protocolBinding.toUpperCase() !== "JSONRPC") return;
    const dialect = dialectOf(protocolVersion ?? "");
    const resolved = resolveUrl(url, cardUrl);
    if (dialect === undefined || resolved === undefined || endpoints[dialect] !== undefined) return;
    endpoints[dialect] = tenant ? { url: resolved, tenant } : { url: resolved };
  });
}

function readV03Endpoints(card: JsonObject, cardUrl: string, endpoints: Partial<Record<A2ADialect, AgentEndpoint>>): void {
  if (endpoints["0.3"] !== undefined || typeof card.url !== "string") return;
  const version = card.protocolVersion ?? "";
  if (typeof version !== "string") throw invalid("protocolVersion must be a string", "$.protocolVersion");
  if (dialectOf(version) !== "0.3") return;
  const preferred = card.preferredTransport ?? "JSONRPC";
  if (typeof preferred !== "string") throw invalid("preferredTransport must be a string", "$.preferredTransport");
  const candidates: unknown[] = [];
  if (preferred.toUpperCase() === "JSONRPC") candidates.push(card.url);
  const extra = card.additionalInterfaces;
  if (extra !== undefined && extra !== null) {
    if (!Array.isArray(extra) || extra.length > MAX_INTERFACES) throw invalid(`additionalInterfaces must be a list of at most ${MAX_INTERFACES}`, "$.additionalInterfaces");
    for (const entry of extra) {
      if (isJsonObject(entry) && typeof entry.transport === "string" && entry.transport.toUpperCase() === "JSONRPC") candidates.push(entry.url);
    }
  }
  for (const candidate of candidates) {
    const resolved = typeof candidate === "string" ? resolveUrl(candidate, cardUrl) : undefined;
    if (resolved !== undefined) {
      endpoints["0.3"] = { url: resolved };
      return;
    }
  }
}

/** `1.x` → 1.0; [0.3, 1.0) or empty → 0.3; anything else → not spoken. */
export function dialectOf(version: string): A2ADialect | undefined {
  const trimmed = version.trim();
  if (trimmed === "") return "0.3";
  const match = /^(\d+)(?:\.(\d+))?(?:\.\d+)?$/.exec(trimmed);
  if (!match) return undefined;
  const major = Number(match[1]);
  const minor = Number(match[2] ?? "0");
  if (major === 1) return "1.0";
  if (major === 0 && minor >= 3) return "0.3";
  return undefined;
}

function resolveUrl(text: string, base: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text, base);
  } catch {
    return undefined;
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.username || url.password) return undefined;
  return url.toString();
}
