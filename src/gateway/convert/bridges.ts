/**
 * a2a_bridge rows → switchyard.api.v1.ForeignBridge (task detail and the agent's status page). Never the request
 * sent, the artifacts or the notification token hash: a status view, not a data view.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ForeignBridgeSchema } from "../../gen/switchyard/api/v1/foreign_pb.js";
import { toTimestamp } from "./values.js";

export const BRIDGE_COLUMNS =
  "id, agent_key, task_id, step_id, attempt, status, last_state, dialect, delivery, foreign_task_id, polls, created_at, sent_at, updated_at, resolved_at";

export interface BridgeRow {
  id: string;
  agent_key: string;
  task_id: string;
  step_id: string;
  attempt: number;
  status: string;
  last_state: string | null;
  dialect: string;
  delivery: string | null;
  foreign_task_id: string | null;
  polls: number;
  created_at: Date;
  sent_at: Date | null;
  updated_at: Date;
  resolved_at: Date | null;
}

export function bridgeToProto(row: BridgeRow): MessageInitShape<typeof ForeignBridgeSchema> {
  return {
    id: row.id,
    agentKey: row.agent_key,
    taskId: row.task_id,
    stepId: row.step_id,
    attempt: row.attempt,
    status: row.status,
    lastState: row.last_state ?? "",
    dialect: row.dialect,
    delivery: row.delivery ?? "",
    foreignTaskId: row.foreign_task_id ?? "",
    polls: row.polls,
    createdAt: toTimestamp(row.created_at),
    sentAt: toTimestamp(row.sent_at),
    updatedAt: toTimestamp(row.updated_at),
    resolvedAt: toTimestamp(row.resolved_at),
  };
}
