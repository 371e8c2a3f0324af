/**
 * The per-tenant registry of foreign agents: where a `foreign:KEY` destination points (base URL, A2A dialect), what
 * egress it is allowed (`allow_host`), which skills its Agent Card must offer, its clearance ceiling and cost.
 *
 * The registry never holds a secret: `credential_ref` is the NAME of a credential in the operator's secret store
 * (e.g. `env:ACME_AGENT_TOKEN`, `vault:a2a/acme`), and values that look like a token are refused.
 * Every function takes the registry's port (store/foreign/foreign-agent-store.ts) and the tenant explicitly, and the
 * port filters by it; API traffic also runs them under row-level security.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Queryable } from "../store/db.js";
import type { ForeignAgentRecord, ForeignAgentStore, ForeignAgentValues, ForeignDelivery, ForeignProtocol } from "../store/foreign/foreign-agent-store.js";
import { ENV_SECRET_NAME_PATTERN } from "./secret-store.js";

export type { ForeignAgentRecord, ForeignDelivery, ForeignProtocol } from "../store/foreign/foreign-agent-store.js";

export const FOREIGN_PROTOCOLS: readonly ForeignProtocol[] = ["auto", "1.0", "0.3", "mcp"];

export const FOREIGN_DELIVERIES: readonly ForeignDelivery[] = ["auto", "push", "poll"];

export const AGENT_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const CREDENTIAL_REF_PATTERN = /^[A-Za-z][A-Za-z0-9_.:/-]{0,127}$/;
// A host name (letters, digits, hyphens, dots), optionally `*.` for every subdomain, optionally `:port`.
const ALLOW_HOST_PATTERN = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:\d{1,5})?$/;
const SECRET_PREFIXES = ["sy_", "sk-", "sk_", "ghp_", "gho_", "github_pat_", "xoxb-", "xoxp-", "glpat-", "AKIA", "eyJ", "Bearer", "Basic"];
const MAX_SKILLS = 100;
const MAX_SKILL_CHARS = 200;
const MAX_CLEARANCE = 10;
const MAX_URL_CHARS = 2048;

/** What a tenant registers. Unset optional fields take the defaults: auto, no credential, no skills, 0, 0, enabled. */
export interface ForeignAgentInput {
  agentKey: string;
  baseUrl: string;
  protocol?: ForeignProtocol;
  credentialRef?: string | null;
  allowHost: string;
  skills?: readonly string[];
  clearanceCeiling?: number;
  costEstimate?: number;
  enabled?: boolean;
  /** Opt-in to re-sends; default false (a timed-out or failed hop fails closed, never re-sent). */
  idempotent?: boolean;
  /** Required for protocol `mcp`, refused otherwise. */
  tool?: string | null;
  /** Default `auto`; A2A only. */
  delivery?: ForeignDelivery;
  /** Default null (everything); otherwise 1 to 100 distinct field names (top-level keys or dotted paths). */
  sendFields?: readonly string[] | null;
  /** Default 0. */
  costPerSecond?: number;
}

/** Fields an update may change; absent fields stay as they are. */
export type ForeignAgentPatch = Partial<Omit<ForeignAgentInput, "agentKey">>;

interface Problem {
  path: string;
  reason: string;
}

/** Lists every problem of a complete agent (an input, or a stored row with a patch applied). */
export function foreignAgentProblems(agent: ForeignAgentInput): Problem[] {
  const problems: Problem[] = [];
  const add = (path: string, reason: string) => problems.push({ path, reason });
  if (!AGENT_KEY_PATTERN.test(agent.agentKey ?? "")) add("agent_key", `must match ${AGENT_KEY_PATTERN.source}`);
  const host = checkBaseUrl(agent.baseUrl, add);
  const allowHost = agent.allowHost ?? "";
  if (allowHost.trim() === "") add("allow_host", "is required: the host this agent may be reached at (the egress allowlist entry)");
  else if (!ALLOW_HOST_PATTERN.test(allowHost)) add("allow_host", `must be a lower-case host name, optionally "*." for subdomains and ":port"; got ${JSON.stringify(allowHost)}`);
  else if (host !== undefined && !hostAllowed(host, allowHost)) add("base_url", `host ${host} is not covered by allow_host ${allowHost}`);
  if (agent.protocol !== undefined && !FOREIGN_PROTOCOLS.includes(agent.protocol)) add("protocol", `must be one of ${FOREIGN_PROTOCOLS.join(", ")}`);
  if (agent.credentialRef != null) checkCredentialRef(agent.credentialRef, add);
  checkSkills(agent.skills ?? [], add);
  const ceiling = agent.clearanceCeiling ?? 0;
  if (!Number.isInteger(ceiling) || ceiling < 0 || ceiling > MAX_CLEARANCE) add("clearance_ceiling", `must be a whole number from 0 to ${MAX_CLEARANCE}`);
  const cost = agent.costEstimate ?? 0;
  if (!Number.isFinite(cost) || cost < 0) add("cost_estimate", "must be a number >= 0");
  if (agent.idempotent !== undefined && typeof agent.idempotent !== "boolean") add("idempotent", "must be true or false");
  checkTransportFields(agent, add);
  const rate = agent.costPerSecond ?? 0;
  if (!Number.isFinite(rate) || rate < 0) add("cost_per_second", "must be a number >= 0");
  return problems;
}

const TOOL_NAME_PATTERN = /^[A-Za-z0-9_.\/-]{1,128}$/;
const FIELD_NAME_PATTERN = /^[^\u0000-\u001f]{1,200}$/;
const MAX_SEND_FIELDS = 100;

function checkTransportFields(agent: ForeignAgentInput, add: (path: string, reason: string) => void): void {
  const mcp = agent.protocol === "mcp";
  const tool = agent.tool ?? null;
  if (mcp && (tool === null || !TOOL_NAME_PATTERN.test(tool))) add("tool", `protocol mcp needs the tool to call (${TOOL_NAME_PATTERN.source})`);
  if (!mcp && tool !== null) add("tool", "only an mcp agent calls a tool; an A2A agent is reached by its skills");
  const delivery = agent.delivery ?? "auto";
  if (!FOREIGN_DELIVERIES.includes(delivery)) add("delivery", `must be one of ${FOREIGN_DELIVERIES.join(", ")}`);
  else if (mcp && delivery !== "auto") add("delivery", "an mcp tool call answers in the call itself; delivery applies to A2A agents only");
  const fields = agent.sendFields ?? null;
  if (fields === null) return;
  if (!Array.isArray(fields) || fields.length === 0 || fields.length > MAX_SEND_FIELDS) {
    add("send_fields", `must list 1 to ${MAX_SEND_FIELDS} input field names (leave it unset to send the whole input)`);
    return;
  }
  const seen = new Set<string>();
  fields.forEach((field, i) => {
    if (typeof field !== "string" || !FIELD_NAME_PATTERN.test(field)) add(`send_fields[${i}]`, "must be a field name of 1 to 200 characters");
    else if (seen.has(field)) add(`send_fields[${i}]`, `duplicate field "${field}"`);
    seen.add(field);
  });
}

function checkBaseUrl(text: string, add: (path: string, reason: string) => void): string | undefined {
  const problem = baseUrlProblem(text);
  if (problem !== undefined) {
    add("base_url", problem);
    return undefined;
  }
  const url = new URL(text);
  return url.port ? `${url.hostname}:${url.port}` : url.hostname;
}

function baseUrlProblem(text: string): string | undefined {
  if (typeof text !== "string" || text.trim() === "") return "is required";
  if (text.length > MAX_URL_CHARS) return `must be at most ${MAX_URL_CHARS} characters`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `is not a URL: ${JSON.stringify(text)}`;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return `must be an http or https URL, got ${url.protocol}`;
  // Credentials in the URL would put a secret in the registry.
  if (url.username || url.password) return "must not carry credentials; name them with credential_ref";
  if (url.hash) return "must not have a #fragment";
  return undefined;
}

function checkCredentialRef(ref: string, add: (path: string, reason: string) => void): void {
  if (!CREDENTIAL_REF_PATTERN.test(ref)) {
    add("credential_ref", `must be the NAME of a credential (${CREDENTIAL_REF_PATTERN.source}), e.g. env:ACME_TOKEN; never the secret`);
  } else if (ref.startsWith("env:") && !ENV_SECRET_NAME_PATTERN.test(ref.slice(4))) {
    add("credential_ref", `env:NAME: NAME must be 1 to 128 letters, digits or _ (it names the variable SWITCHYARD_SECRET_<tenant>__NAME)`);
  } else if (looksLikeSecret(ref)) {
    add("credential_ref", "looks like a secret, not the name of one: store the secret in your secret store and register its name");
  }
}

/** Token-shaped text: a known token prefix, or a long run of mixed letters and digits no human names things with. */
export function looksLikeSecret(text: string): boolean {
  if (SECRET_PREFIXES.some((p) => text.startsWith(p))) return true;
  return text.split(/[:/._-]/).some((part) => part.length >= 24 && /[0-9]/.test(part) && /[A-Za-z]/.test(part));
}

function checkSkills(skills: readonly string[], add: (path: string, reason: string) => void): void {
  if (!Array.isArray(skills)) {
    add("skills", "must be a list of skill ids");
    return;
  }
  if (skills.length > MAX_SKILLS) add("skills", `at most ${MAX_SKILLS} skills`);
  const seen = new Set<string>();
  skills.forEach((skill, i) => {
    if (typeof skill !== "string" || skill.trim() === "" || skill.length > MAX_SKILL_CHARS) add(`skills[${i}]`, `must be a skill id of 1 to ${MAX_SKILL_CHARS} characters`);
    else if (seen.has(skill)) add(`skills[${i}]`, `duplicate skill "${skill}"`);
    seen.add(skill);
  });
}

/** Whether `host` (`name` or `name:port`) is covered by an allow_host entry (`name`, `*.name`, with or without port). */
export function hostAllowed(host: string, allowHost: string): boolean {
  const [name, port] = splitPort(host.toLowerCase());
  const [allowName, allowPort] = splitPort(allowHost.toLowerCase());
  if (allowPort !== undefined && allowPort !== port) return false;
  if (allowName.startsWith("*.")) return name.endsWith(allowName.slice(1)) && name.length > allowName.length - 1;
  return name === allowName;
}

function splitPort(host: string): [string, string | undefined] {
  const colon = host.lastIndexOf(":");
  return colon < 0 ? [host, undefined] : [host.slice(0, colon), host.slice(colon + 1)];
}

function invalid(problems: Problem[]): SwitchyardError {
  const first = problems[0]!;
  const message = problems.length === 1 ? `${first.path}: ${first.reason}` : `${problems.length} problems: ${problems.map((p) => `${p.path}: ${p.reason}`).join("; ")}`;
  return new SwitchyardError(ErrorCode.InvalidArgument, message, { details: { path: first.path, reason: first.reason, errors: problems } });
}

/** A complete agent's columns, its defaults filled in (what a registration or an update writes). */
function valuesOf(agent: ForeignAgentInput): ForeignAgentValues {
  return {
    baseUrl: agent.baseUrl,
    protocol: agent.protocol ?? "auto",
    credentialRef: agent.credentialRef ?? null,
    allowHost: agent.allowHost,
    skills: [...(agent.skills ?? [])],
    clearanceCeiling: agent.clearanceCeiling ?? 0,
    costEstimate: agent.costEstimate ?? 0,
    enabled: agent.enabled ?? true,
    idempotent: agent.idempotent ?? false,
    tool: agent.tool ?? null,
    delivery: agent.delivery ?? "auto",
    sendFields: agent.sendFields ? [...agent.sendFields] : null,
    costPerSecond: agent.costPerSecond ?? 0,
  };
}

function notFound(orgId: string, agentKey: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.NotFound, `no foreign agent "${agentKey}" for tenant ${orgId}`, { details: { path: "agent_key", orgId, agentKey } });
}

/** Adds an agent (enabled unless said otherwise). INVALID_ARGUMENT listing every problem; ALREADY_EXISTS for a taken key. */
export async function registerForeignAgent(agents: Pick<ForeignAgentStore, "insert">, db: Queryable, orgId: string, input: ForeignAgentInput): Promise<ForeignAgentRecord> {
  const problems = foreignAgentProblems(input);
  if (problems.length > 0) throw invalid(problems);
  const agent = await agents.insert(db, orgId, input.agentKey, valuesOf(input));
  if (!agent) {
    throw new SwitchyardError(ErrorCode.AlreadyExists, `foreign agent "${input.agentKey}" is already registered for tenant ${orgId}; change it with Update`, {
      details: { path: "agent_key", orgId, agentKey: input.agentKey },
    });
  }
  return agent;
}

/** The agent, or undefined (for FOREIGN dispatch, which fails the hop closed itself). */
export async function findForeignAgent(agents: Pick<ForeignAgentStore, "find">, db: Queryable, orgId: string, agentKey: string): Promise<ForeignAgentRecord | undefined> {
  return agents.find(db, orgId, agentKey);
}

export async function getForeignAgent(agents: Pick<ForeignAgentStore, "find">, db: Queryable, orgId: string, agentKey: string): Promise<ForeignAgentRecord> {
  const agent = await agents.find(db, orgId, agentKey);
  if (!agent) throw notFound(orgId, agentKey);
  return agent;
}

export async function listForeignAgents(agents: Pick<ForeignAgentStore, "list">, db: Queryable, orgId: string): Promise<ForeignAgentRecord[]> {
  return agents.list(db, orgId);
}

/** Applies a patch; the result is validated as a whole (so base_url and allow_host stay consistent). */
export async function updateForeignAgent(agents: Pick<ForeignAgentStore, "lock" | "update">, db: Queryable, orgId: string, agentKey: string, patch: ForeignAgentPatch): Promise<ForeignAgentRecord> {
  const current = await agents.lock(db, orgId, agentKey);
  if (!current) throw notFound(orgId, agentKey);
  const defined = Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined)) as ForeignAgentPatch;
  const next: ForeignAgentInput = { ...current, ...defined, agentKey };
  const problems = foreignAgentProblems(next);
  if (problems.length > 0) throw invalid(problems);
  return agents.update(db, orgId, agentKey, valuesOf(next));
}

/** Disables an agent: hops to it fail closed until it is enabled again. Idempotent. */
export async function disableForeignAgent(agents: Pick<ForeignAgentStore, "disable">, db: Queryable, orgId: string, agentKey: string): Promise<ForeignAgentRecord> {
  const agent = await agents.disable(db, orgId, agentKey);
  if (!agent) throw notFound(orgId, agentKey);
  return agent;
}
