/**
 * The tenant's foreign-agent registry as the CLI reaches it: a client of the gateway's ForeignAgentService, run
 * in-process against the database (direct mode: direct-transport.ts; `--tenant` names the tenant). It answers with
 * the registry's own records, so `foreign register|list|disable` print what they printed when they called the
 * registry themselves. Register's check reaches the agent from the process running the handler: in direct mode this
 * one, through the transports a coordinator would build from this configuration.
 *
 * Direct mode only: `foreign register --url` names the agent's base URL, which the program's global `--url` (the
 * gateway of remote commands) would take, so the `foreign` commands do not follow `--url` / SWITCHYARD_URL yet.
 */
import { createClient, type Transport } from "@connectrpc/connect";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import type { ForeignAgentInput, ForeignAgentRecord } from "../../foreign/registry.js";
import { ForeignAgentService, type ForeignAgent } from "../../gen/switchyard/api/v1/foreign_pb.js";
import { foreignAgentInputToProto, foreignDeliveries, foreignProtocols } from "../../gateway/convert/foreign.js";
import { requireTenant } from "../args.js";
import type { CliContext } from "../context.js";
import { callerAt } from "./remote-api.js";

// The shapes the API takes and answers in, named here so the command speaks the client's vocabulary.
export type { ForeignAgentInput, ForeignAgentRecord };

/** A registered agent, and what the registration check told the operator. */
export interface RegisteredForeignAgent {
  agent: ForeignAgentRecord;
  /** What the check could not do or noticed (the card could not be fetched; results polled for want of push). */
  warnings: string[];
  /** What the check found when it reached the agent (`summary`: e.g. the card's name and dialect; `delivery`: push, poll or call); null when it did not. */
  check: { summary: string; delivery: string } | null;
}

export interface ForeignApi {
  /** The tenant acted for. */
  readonly tenant: string;
  /** Checks the agent (refusing one that cannot serve the registration) and stores it. */
  register(input: ForeignAgentInput): Promise<RegisteredForeignAgent>;
  list(): Promise<ForeignAgentRecord[]>;
  disable(agentKey: string): Promise<ForeignAgentRecord>;
}

export async function withForeignApi<T>(ctx: CliContext, tenant: string | undefined, fn: (api: ForeignApi) => Promise<T>): Promise<T> {
  const orgId = requireTenant(tenant);
  const direct = (await import("./direct-transport.js")).openDirectTransport(ctx, orgId);
  try {
    return await fn(clientForeignApi(direct.transport, { tenant: orgId, where: "the database (direct mode)" }));
  } finally {
    await direct.close();
  }
}

/** The ForeignApi over any transport to ForeignAgentService. */
export function clientForeignApi(transport: Transport, options: { tenant: string; where: string }): ForeignApi {
  const { tenant, where } = options;
  const client = createClient(ForeignAgentService, transport);
  const call = callerAt(where);
  const record = (agent: ForeignAgent | undefined): ForeignAgentRecord => {
    if (!agent) throw new SwitchyardError(ErrorCode.Internal, `${where} answered without an agent`);
    return foreignAgentFromProto(tenant, agent);
  };
  return {
    tenant,
    async register(input) {
      try {
        const res = await call(() => client.register({ agent: foreignAgentInputToProto(withInt32Clearance(input)) }));
        return { agent: record(res.agent), warnings: [...res.warnings], check: res.check ? { summary: res.check.summary, delivery: res.check.delivery } : null };
      } catch (error) {
        throw withRegistryPaths(error);
      }
    },
    async list() {
      return (await call(() => client.list({}))).agents.map((a) => record(a));
    },
    async disable(agentKey) {
      return record((await call(() => client.disable({ agentKey }))).agent);
    },
  };
}

const MAX_INT32 = 2_147_483_647;

/**
 * `--clearance` takes any whole number; the message field is an int32, which cannot carry one beyond it. Sent as the
 * largest int32 instead, it is refused by the registry in the very words it always was (the range, not the value).
 */
function withInt32Clearance(input: ForeignAgentInput): ForeignAgentInput {
  const ceiling = input.clearanceCeiling;
  return ceiling !== undefined && ceiling > MAX_INT32 ? { ...input, clearanceCeiling: MAX_INT32 } : input;
}

/**
 * Register reports an input's problems under `agent` (`agent.base_url`); `foreign register` has always named them as
 * the registry does (`base_url`), so the error is rebuilt with the registry's paths, message and details.
 */
function withRegistryPaths(error: unknown): unknown {
  if (!(error instanceof SwitchyardError) || error.code !== ErrorCode.InvalidArgument || !Array.isArray(error.details.errors)) return error;
  const listed = error.details.errors as Array<{ path: string; reason: string }>;
  if (listed.length === 0 || !listed.every((p) => p.path.startsWith("agent."))) return error;
  const problems = listed.map((p) => ({ path: p.path.slice("agent.".length), reason: p.reason }));
  const first = problems[0]!;
  const message = problems.length === 1 ? `${first.path}: ${first.reason}` : `${problems.length} problems: ${problems.map((p) => `${p.path}: ${p.reason}`).join("; ")}`;
  return new SwitchyardError(ErrorCode.InvalidArgument, message, { cause: error, details: { path: first.path, reason: first.reason, errors: problems } });
}

/** The registry record an answer describes (the tenant is the caller's; the proto does not repeat it). */
export function foreignAgentFromProto(orgId: string, agent: ForeignAgent): ForeignAgentRecord {
  return {
    orgId,
    agentKey: agent.agentKey,
    baseUrl: agent.baseUrl,
    protocol: foreignProtocols.fromProto(agent.protocol),
    credentialRef: agent.credentialRef ?? null,
    allowHost: agent.allowHost,
    skills: [...agent.skills],
    clearanceCeiling: agent.clearanceCeiling,
    costEstimate: agent.costEstimate,
    enabled: agent.enabled,
    idempotent: agent.idempotent,
    tool: agent.tool ?? null,
    delivery: foreignDeliveries.fromProto(agent.delivery),
    // Empty on the wire means "the whole input", which the registry holds as null (it refuses an empty list).
    sendFields: agent.sendFields.length > 0 ? [...agent.sendFields] : null,
    costPerSecond: agent.costPerSecond,
    createdAt: dateOf(agent.createdAt),
    updatedAt: dateOf(agent.updatedAt),
  };
}

function dateOf(value: Timestamp | undefined): Date {
  return value ? timestampDate(value) : new Date(0);
}
