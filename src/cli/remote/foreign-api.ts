/**
 * The tenant's foreign-agent registry as the CLI reaches it: a client of the gateway's ForeignAgentService, run
 * in-process against the database (direct mode: direct-transport.ts; `--tenant` names the tenant). It answers with
 * the registry's own records, so `foreign list|disable` print what they printed when they read the registry
 * themselves.
 *
 * Direct mode only: `foreign register --url` names the agent's base URL, which the program's global `--url` (the
 * gateway of remote commands) would take, so the `foreign` commands do not follow `--url` / SWITCHYARD_URL yet.
 * `register` is not here: its check's summary (`checked foreign:KEY: …, results by …`) is not in the API's answer.
 */
import { createClient, type Transport } from "@connectrpc/connect";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import type { ForeignAgentRecord } from "../../foreign/registry.js";
import { ForeignAgentService, type ForeignAgent } from "../../gen/switchyard/api/v1/foreign_pb.js";
import { foreignDeliveries, foreignProtocols } from "../../gateway/convert/foreign.js";
import { requireTenant } from "../args.js";
import type { CliContext } from "../context.js";
import { callerAt } from "./remote-api.js";

// The shape the API answers in, named here so the command speaks the client's vocabulary.
export type { ForeignAgentRecord };

export interface ForeignApi {
  /** The tenant acted for. */
  readonly tenant: string;
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
    async list() {
      return (await call(() => client.list({}))).agents.map((a) => record(a));
    },
    async disable(agentKey) {
      return record((await call(() => client.disable({ agentKey }))).agent);
    },
  };
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
