/**
 * Agent Cards of foreign agents, fetched from `{base}/.well-known/agent-card.json` through the injected (guarded)
 * fetch and cached per (tenant, agent key) with a TTL and a size bound.
 *
 * Dispatch asks for a card together with what the hop needs of it (a skill, push support, a dialect). A cached card
 * that falls short is re-fetched once — the agent may have changed since — and if the fresh card still falls short,
 * or cannot be fetched or read, `get` fails closed with FAILED_PRECONDITION and `details.reason`:
 * - `CARD_UNREACHABLE`: the fetch failed (network, timeout, non-2xx, refused by the egress guard);
 * - `CARD_INVALID`: the body is too large, not JSON, or not an Agent Card;
 * - `CARD_MISSING_SKILL`: a required skill is not on the card;
 * - `CARD_NO_PUSH`: `capabilities.pushNotifications` is not true and the request requires push (only a registration
 *   with `delivery: push` does: an agent without push is otherwise polled with GetTask);
 * - `CARD_NO_PROTOCOL`: no JSON-RPC interface in a dialect we speak that the registry's preference allows.
 * A card this call has just fetched is not fetched again. Failures are never cached, so the next dispatch retries.
 * How the dialect is read off the card is documented in card-parse.ts; `auto` prefers v1.0 over v0.3.
 */
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { abortError } from "./client-errors.js";
import { parseAgentCard, type AgentEndpoint, type ParsedAgentCard } from "./card-parse.js";
import type { A2ADialect } from "./task-state.js";
import { parseUntrustedJson, readCappedBody } from "./untrusted-json.js";

export type ProtocolPreference = "auto" | "1.0" | "0.3";

export const AGENT_CARD_PATH = "/.well-known/agent-card.json";
/** Where agents written before A2A 0.3 serve their card; asked only when the current path answers 404. */
export const LEGACY_AGENT_CARD_PATH = "/.well-known/agent.json";

export type CardFailureReason = "CARD_UNREACHABLE" | "CARD_INVALID" | "CARD_MISSING_SKILL" | "CARD_NO_PUSH" | "CARD_NO_PROTOCOL";

export interface AgentCardCacheOptions {
  /** The guarded fetch; every card request goes through it. */
  fetch: typeof globalThis.fetch;
  /** How long a fetched card is used without asking again. @defaultValue 300_000 (5 minutes) */
  ttlMs?: number;
  /** Cards kept at most; the least recently used goes first. @defaultValue 1_000 */
  maxEntries?: number;
  /** Largest card body read. @defaultValue 262_144 (256 KiB) */
  maxCardBytes?: number;
  /** Per-fetch timeout. @defaultValue 10_000 */
  timeoutMs?: number;
  /** Clock, for tests. @defaultValue Date.now */
  now?: () => number;
}

export interface AgentCardRequest {
  /** The registry's base URL for the agent; the card is read from `{baseUrl}/.well-known/agent-card.json`. */
  baseUrl: string;
  /** Skill id(s) the card must list. */
  requireSkill?: string | readonly string[];
  /** Whether the card must declare push notifications. @defaultValue true */
  requirePush?: boolean;
  /** The registry's protocol preference. @defaultValue "auto" */
  protocol?: ProtocolPreference;
  /** Skip the cache (the fetched card replaces the cached one). */
  forceRefresh?: boolean;
  signal?: AbortSignal;
}

/** A card as dispatch uses it; `protocol` is the dialect chosen for this request from the preference. */
export interface ResolvedAgentCard extends ParsedAgentCard {
  orgId: string;
  agentKey: string;
  baseUrl: string;
  cardUrl: string;
  protocol: A2ADialect;
  fetchedAt: number;
  expiresAt: number;
}

interface Entry {
  baseUrl: string;
  cardUrl: string;
  card: ParsedAgentCard;
  fetchedAt: number;
  expiresAt: number;
}

export class AgentCardCache {
  private readonly fetchImpl: typeof globalThis.fetch;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly maxCardBytes: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();
  // One fetch per key at a time: a burst of dispatches to one agent asks for its card once.
  private readonly inflight = new Map<string, Promise<Entry>>();

  constructor(options: AgentCardCacheOptions) {
    this.fetchImpl = options.fetch;
    this.ttlMs = options.ttlMs ?? 300_000;
    this.maxEntries = Math.max(1, options.maxEntries ?? 1_000);
    this.maxCardBytes = options.maxCardBytes ?? 262_144;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The agent's card, meeting the request's requirements, or a FAILED_PRECONDITION with `details.reason`. */
  async get(orgId: string, agentKey: string, request: AgentCardRequest): Promise<ResolvedAgentCard> {
    const key = cacheKey(orgId, agentKey);
    const cached = request.forceRefresh ? undefined : this.fresh(key, request.baseUrl);
    if (cached) {
      const problem = shortfall(cached.card, request);
      if (problem === undefined) return resolved(orgId, agentKey, cached, request);
      this.entries.delete(key);
    }
    const entry = await abortable(this.fetchEntry(key, orgId, agentKey, request.baseUrl), request.signal);
    const problem = shortfall(entry.card, request);
    if (problem !== undefined) throw cardError(problem.reason, orgId, agentKey, problem.message, entry.cardUrl);
    return resolved(orgId, agentKey, entry, request);
  }

  /** Forgets a card (e.g. after the registry entry changed). */
  invalidate(orgId: string, agentKey: string): void {
    this.entries.delete(cacheKey(orgId, agentKey));
  }

  clear(): void {
    this.entries.clear();
  }

  private fresh(key: string, baseUrl: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.now() || entry.baseUrl !== baseUrl) {
      this.entries.delete(key);
      return undefined;
    }
    // Re-insert so Map order is least-recently-used first.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry;
  }

  // The shared fetch is bounded by the timeout only: one caller giving up must not fail the others waiting on it.
  private fetchEntry(key: string, orgId: string, agentKey: string, baseUrl: string): Promise<Entry> {
    const flightKey = `${key}\u0000${baseUrl}`;
    const running = this.inflight.get(flightKey);
    if (running) return running;
    const promise = this.load(orgId, agentKey, baseUrl)
      .then((entry) => {
        this.entries.delete(key);
        this.entries.set(key, entry);
        while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
        return entry;
      })
      .finally(() => this.inflight.delete(flightKey));
    this.inflight.set(flightKey, promise);
    return promise;
  }

  private async load(orgId: string, agentKey: string, baseUrl: string): Promise<Entry> {
    const signal = AbortSignal.timeout(this.timeoutMs);
    let cardUrl = cardUrlFor(baseUrl, orgId, agentKey, AGENT_CARD_PATH);
    let bytes: Uint8Array;
    try {
      bytes = await this.fetchCard(cardUrl, orgId, agentKey, signal);
    } catch (error) {
      // Agents written before A2A 0.3 serve their card only at the older well-known path: a 404 at the current one
      // is asked there once (same deadline). Any other failure is the answer.
      if (!(error instanceof SwitchyardError && error.details.reason === "CARD_UNREACHABLE" && error.details.status === 404)) throw error;
      cardUrl = cardUrlFor(baseUrl, orgId, agentKey, LEGACY_AGENT_CARD_PATH);
      bytes = await this.fetchCard(cardUrl, orgId, agentKey, signal);
    }
    let card: ParsedAgentCard;
    try {
      card = parseAgentCard(parseUntrustedJson(bytes, "Agent Card"), cardUrl);
    } catch (error) {
      throw cardError("CARD_INVALID", orgId, agentKey, describe(error), cardUrl, { cause: error });
    }
    const fetchedAt = this.now();
    return { baseUrl, cardUrl, card, fetchedAt, expiresAt: fetchedAt + this.ttlMs };
  }

  private async fetchCard(cardUrl: string, orgId: string, agentKey: string, signal: AbortSignal): Promise<Uint8Array> {
    try {
      // A2A-Version 1.0, as the SDK's resolver sends: an agent serving both dialects answers with its v1.0 card.
      const response = await this.fetchImpl(cardUrl, { headers: { accept: "application/json", "A2A-Version": "1.0" }, signal, redirect: "manual" });
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        throw cardError("CARD_UNREACHABLE", orgId, agentKey, `Agent Card request answered HTTP ${response.status}`, cardUrl, { status: response.status });
      }
      return await readCappedBody(response, this.maxCardBytes, "Agent Card");
    } catch (error) {
      if (error instanceof SwitchyardError && error.details.reason === "CARD_UNREACHABLE") throw error;
      if (error instanceof SwitchyardError && error.code === ErrorCode.PayloadTooLarge) {
        throw cardError("CARD_INVALID", orgId, agentKey, error.message, cardUrl, { cause: error });
      }
      const why = signal.aborted ? `timed out after ${this.timeoutMs} ms` : describe(error);
      throw cardError("CARD_UNREACHABLE", orgId, agentKey, `Agent Card could not be fetched: ${why}`, cardUrl, { cause: error });
    }
  }
}

/** The dialect a request gets from a card, or undefined when the preference cannot be met. */
export function chooseDialect(endpoints: Partial<Record<A2ADialect, AgentEndpoint>>, preference: ProtocolPreference = "auto"): A2ADialect | undefined {
  if (preference !== "auto") return endpoints[preference] ? preference : undefined;
  if (endpoints["1.0"]) return "1.0";
  if (endpoints["0.3"]) return "0.3";
  return undefined;
}

function shortfall(card: ParsedAgentCard, request: AgentCardRequest): { reason: CardFailureReason; message: string } | undefined {
  const skills = request.requireSkill === undefined ? [] : typeof request.requireSkill === "string" ? [request.requireSkill] : request.requireSkill;
  const missing = skills.filter((skill) => !card.skills.includes(skill));
  if (missing.length > 0) return { reason: "CARD_MISSING_SKILL", message: `the Agent Card lacks skill(s) ${missing.join(", ")}` };
  if ((request.requirePush ?? true) && !card.pushNotifications) {
    return { reason: "CARD_NO_PUSH", message: "the Agent Card does not declare push notification support" };
  }
  if (chooseDialect(card.endpoints, request.protocol) === undefined) {
    const wanted = request.protocol && request.protocol !== "auto" ? `A2A ${request.protocol}` : "A2A 1.0 or 0.3";
    return { reason: "CARD_NO_PROTOCOL", message: `the Agent Card offers no JSON-RPC interface speaking ${wanted}` };
  }
  return undefined;
}

function resolved(orgId: string, agentKey: string, entry: Entry, request: AgentCardRequest): ResolvedAgentCard {
  return {
    ...entry.card,
    orgId,
    agentKey,
    baseUrl: entry.baseUrl,
    cardUrl: entry.cardUrl,
    protocol: chooseDialect(entry.card.endpoints, request.protocol)!,
    fetchedAt: entry.fetchedAt,
    expiresAt: entry.expiresAt,
  };
}

function cardUrlFor(baseUrl: string, orgId: string, agentKey: string, path: string): string {
  try {
    const url = new URL(baseUrl);
    url.pathname = `${url.pathname.replace(/\/+$/, "")}${path}`;
    url.search = "";
    url.hash = "";
    return url.toString();
  } catch (error) {
    throw cardError("CARD_UNREACHABLE", orgId, agentKey, `base URL ${JSON.stringify(baseUrl)} is not a URL`, baseUrl, { cause: error });
  }
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortError(signal.reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal.reason));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function cacheKey(orgId: string, agentKey: string): string {
  return `${orgId}\u0000${agentKey}`;
}

function cardError(
  reason: CardFailureReason,
  orgId: string,
  agentKey: string,
  message: string,
  cardUrl: string,
  extra: { cause?: unknown; status?: number } = {},
): SwitchyardError {
  const details: Record<string, unknown> = { reason, orgId, agentKey, cardUrl };
  if (extra.status !== undefined) details.status = extra.status;
  if (extra.cause instanceof SwitchyardError) details.causeCode = extra.cause.code;
  return new SwitchyardError(ErrorCode.FailedPrecondition, `foreign agent "${agentKey}": ${message}`, { cause: extra.cause, details });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
