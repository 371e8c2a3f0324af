/**
 * Stored workflows ↔ switchyard.api.v1 workflow messages.
 */
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type { Workflow, WorkflowSchema, WorkflowSummary, WorkflowSummarySchema } from "../../gen/switchyard/api/v1/workflows_pb.js";
import type { StoredWorkflow, WorkflowSummary as WorkflowSummaryRecord } from "../../store/workflow-store.js";
import { workflowToSource } from "../../workflow/definition.js";
import { fromTimestamp, toTimestamp } from "./values.js";

export function workflowToProto(stored: StoredWorkflow): MessageInitShape<typeof WorkflowSchema> {
  return {
    name: stored.name,
    version: stored.version,
    ref: stored.ref,
    digest: stored.digest,
    createdAt: toTimestamp(stored.createdAt),
    // The file format (snake_case, defaults spelled out): what `workflow get` shows and `workflow submit` takes back.
    definition: JSON.parse(JSON.stringify(workflowToSource(stored.definition))) as JsonObject,
  };
}

/** The workflow as the CLI prints it: the definition stays in the file format. */
export interface WorkflowDocument {
  name: string;
  version: number;
  ref: string;
  digest: string;
  createdAt: Date;
  definition: Record<string, unknown>;
}

export function workflowFromProto(workflow: Workflow): WorkflowDocument {
  return {
    name: workflow.name,
    version: workflow.version,
    ref: workflow.ref,
    digest: workflow.digest,
    createdAt: fromTimestamp(workflow.createdAt) ?? new Date(0),
    definition: workflow.definition ?? {},
  };
}

export function workflowSummaryToProto(summary: WorkflowSummaryRecord): MessageInitShape<typeof WorkflowSummarySchema> {
  return {
    name: summary.name,
    version: summary.version,
    ref: summary.ref,
    versions: summary.versions,
    ...(summary.description !== undefined ? { description: summary.description } : {}),
    createdAt: toTimestamp(summary.createdAt),
  };
}

export function workflowSummaryFromProto(summary: WorkflowSummary): WorkflowSummaryRecord {
  return {
    name: summary.name,
    version: summary.version,
    ref: summary.ref,
    versions: summary.versions,
    ...(summary.description !== undefined ? { description: summary.description } : {}),
    createdAt: fromTimestamp(summary.createdAt) ?? new Date(0),
  };
}
