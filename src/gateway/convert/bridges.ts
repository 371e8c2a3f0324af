/**
 * Bridge summaries (the bridges port's status views) → switchyard.api.v1.ForeignBridge (task detail and the agent's
 * status page). Never the request sent, the artifacts or the notification token hash: a status view, not a data view.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ForeignBridgeSchema } from "../../gen/switchyard/api/v1/foreign_pb.js";
import type { BridgeSummary } from "../../store/bridges/bridge-store.js";
import { toTimestamp } from "./values.js";

export function bridgeToProto(bridge: BridgeSummary): MessageInitShape<typeof ForeignBridgeSchema> {
  return {
    id: bridge.id,
    agentKey: bridge.agentKey,
    taskId: bridge.taskId,
    stepId: bridge.stepId,
    attempt: bridge.attempt,
    status: bridge.status,
    lastState: bridge.lastState ?? "",
    dialect: bridge.dialect,
    delivery: bridge.delivery ?? "",
    foreignTaskId: bridge.foreignTaskId ?? "",
    polls: bridge.polls,
    createdAt: toTimestamp(bridge.createdAt),
    sentAt: toTimestamp(bridge.sentAt),
    updatedAt: toTimestamp(bridge.updatedAt),
    resolvedAt: toTimestamp(bridge.resolvedAt),
  };
}
