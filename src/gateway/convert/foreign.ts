/**
 * Foreign-agent registry rows ↔ switchyard.api.v1.ForeignAgent, and the update mask → patch.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { FieldMask } from "@bufbuild/protobuf/wkt";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import type {
  ForeignAgentInput,
  ForeignAgentPatch,
  ForeignAgentRecord,
  ForeignDelivery as RegistryDelivery,
  ForeignProtocol as RegistryProtocol,
} from "../../foreign/registry.js";
import { ForeignDelivery, ForeignProtocol, type ForeignAgent, type ForeignAgentSchema } from "../../gen/switchyard/api/v1/foreign_pb.js";
import { enumMapping, toTimestamp } from "./values.js";

export const foreignProtocols = enumMapping<RegistryProtocol, ForeignProtocol>("foreign protocol", [
  ["auto", ForeignProtocol.AUTO],
  ["1.0", ForeignProtocol.V1_0],
  ["0.3", ForeignProtocol.V0_3],
  ["mcp", ForeignProtocol.MCP],
]);

export const foreignDeliveries = enumMapping<RegistryDelivery, ForeignDelivery>("foreign delivery", [
  ["auto", ForeignDelivery.AUTO],
  ["push", ForeignDelivery.PUSH],
  ["poll", ForeignDelivery.POLL],
]);

export function foreignAgentToProto(agent: ForeignAgentRecord): MessageInitShape<typeof ForeignAgentSchema> {
  return {
    agentKey: agent.agentKey,
    baseUrl: agent.baseUrl,
    protocol: foreignProtocols.toProto(agent.protocol),
    ...(agent.credentialRef !== null ? { credentialRef: agent.credentialRef } : {}),
    allowHost: agent.allowHost,
    skills: agent.skills,
    clearanceCeiling: agent.clearanceCeiling,
    costEstimate: agent.costEstimate,
    enabled: agent.enabled,
    idempotent: agent.idempotent,
    ...(agent.tool !== null ? { tool: agent.tool } : {}),
    delivery: foreignDeliveries.toProto(agent.delivery),
    sendFields: agent.sendFields ?? [],
    costPerSecond: agent.costPerSecond,
    createdAt: toTimestamp(agent.createdAt),
    updatedAt: toTimestamp(agent.updatedAt),
  };
}

/**
 * The Register request's agent for an input (the CLI's `foreign register`): what the input leaves out is left unset,
 * which `foreignAgentInputFromProto` reads as the registry's defaults.
 */
export function foreignAgentInputToProto(input: ForeignAgentInput): MessageInitShape<typeof ForeignAgentSchema> {
  return {
    agentKey: input.agentKey,
    baseUrl: input.baseUrl,
    ...(input.protocol !== undefined ? { protocol: foreignProtocols.toProto(input.protocol) } : {}),
    ...(input.credentialRef != null ? { credentialRef: input.credentialRef } : {}),
    allowHost: input.allowHost,
    skills: [...(input.skills ?? [])],
    clearanceCeiling: input.clearanceCeiling ?? 0,
    costEstimate: input.costEstimate ?? 0,
    idempotent: input.idempotent ?? false,
    ...(input.tool != null ? { tool: input.tool } : {}),
    ...(input.delivery !== undefined ? { delivery: foreignDeliveries.toProto(input.delivery) } : {}),
    sendFields: [...(input.sendFields ?? [])],
    costPerSecond: input.costPerSecond ?? 0,
  };
}

/** Register: unset protocol means auto; `enabled` is true unless the request says false explicitly — proto3 cannot. */
export function foreignAgentInputFromProto(agent: ForeignAgent | undefined): ForeignAgentInput {
  if (!agent) throw new SwitchyardError(ErrorCode.InvalidArgument, "agent: is required", { details: { path: "agent" } });
  return {
    agentKey: agent.agentKey,
    baseUrl: agent.baseUrl,
    protocol: foreignProtocols.fromProtoOptional(agent.protocol) ?? "auto",
    credentialRef: agent.credentialRef ?? null,
    allowHost: agent.allowHost,
    skills: agent.skills,
    clearanceCeiling: agent.clearanceCeiling,
    costEstimate: agent.costEstimate,
    enabled: true,
    idempotent: agent.idempotent,
    tool: agent.tool ?? null,
    delivery: foreignDeliveries.fromProtoOptional(agent.delivery) ?? "auto",
    sendFields: agent.sendFields.length > 0 ? agent.sendFields : null,
    costPerSecond: agent.costPerSecond,
  };
}

const MASKABLE: Record<string, keyof ForeignAgentPatch> = {
  base_url: "baseUrl",
  protocol: "protocol",
  credential_ref: "credentialRef",
  allow_host: "allowHost",
  skills: "skills",
  clearance_ceiling: "clearanceCeiling",
  cost_estimate: "costEstimate",
  enabled: "enabled",
  idempotent: "idempotent",
  tool: "tool",
  delivery: "delivery",
  send_fields: "sendFields",
  cost_per_second: "costPerSecond",
};

/** The patch an Update asks for: exactly the fields in `update_mask` (snake_case paths), taken from `agent`. */
export function foreignAgentPatchFromProto(agent: ForeignAgent, mask: FieldMask | undefined): ForeignAgentPatch {
  const paths = mask?.paths ?? [];
  if (paths.length === 0) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `update_mask: name the fields to change (${Object.keys(MASKABLE).join(", ")})`, {
      details: { path: "update_mask" },
    });
  }
  const patch: ForeignAgentPatch = {};
  for (const path of paths) {
    const field = MASKABLE[path];
    if (!field) {
      throw new SwitchyardError(ErrorCode.InvalidArgument, `update_mask: "${path}" cannot be changed; one of ${Object.keys(MASKABLE).join(", ")}`, {
        details: { path: "update_mask" },
      });
    }
    switch (field) {
      case "protocol": {
        const protocol = foreignProtocols.fromProtoOptional(agent.protocol);
        if (!protocol) throw new SwitchyardError(ErrorCode.InvalidArgument, "agent.protocol: must be AUTO, V1_0, V0_3 or MCP", { details: { path: "agent.protocol" } });
        patch.protocol = protocol;
        break;
      }
      case "delivery": {
        const delivery = foreignDeliveries.fromProtoOptional(agent.delivery);
        if (!delivery) throw new SwitchyardError(ErrorCode.InvalidArgument, "agent.delivery: must be AUTO, PUSH or POLL", { details: { path: "agent.delivery" } });
        patch.delivery = delivery;
        break;
      }
      case "tool":
        patch.tool = agent.tool ?? null;
        break;
      case "sendFields":
        // Empty in the mask: send the whole input again.
        patch.sendFields = agent.sendFields.length > 0 ? agent.sendFields : null;
        break;
      case "credentialRef":
        // In the mask but unset: remove the reference.
        patch.credentialRef = agent.credentialRef ?? null;
        break;
      default:
        (patch as Record<string, unknown>)[field] = agent[field];
    }
  }
  return patch;
}
