/** Shared set-up of the reply tests: tenants, a workflow, connections, tasks with addresses, reply requests. */
import { randomUUID } from "node:crypto";
import type { ApplyResult } from "../../src/coordinator/engine.js";
import type { EventSender } from "../../src/core/model.js";
import type { ReplyAddress } from "../../src/core/reply-address.js";
import { defaultReplyKey } from "../../src/replies/reply-key.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import type { TestRuntime } from "../support/runtime.js";

export const SLACK: ReplyAddress = { kind: "slack_thread", teamId: "T0ACME", channel: "C0GENERAL", threadTs: "1700000000.000100" };
export const FORGE: ReplyAddress = { kind: "forge_comment", forge: "github", host: "github.com", repository: "acme/app", number: 7 };

/** A tenant with a one-step workflow `answer` (role:answerer). */
export async function setupTenant(rt: TestRuntime, orgId: string, yaml = 'name: answer\nsteps:\n  - { id: answer, to: "role:answerer" }\n'): Promise<void> {
  await rt.pool.query("INSERT INTO tenants (org_id, name) VALUES ($1, $1) ON CONFLICT DO NOTHING", [orgId]);
  await submitWorkflow(rt.pool, orgId, parseWorkflowDefinition(yaml));
}

/** A connection row (the secret stands in for a sealed envelope: nothing here dials). */
export async function addConnection(
  rt: TestRuntime,
  orgId: string,
  fields: { kind: string; accountKey: string; targets?: string[] },
): Promise<string> {
  const id = randomUUID();
  await rt.pool.query(
    `INSERT INTO connections (id, org_id, kind, account_key, api_base_url, secret_ciphertext, secret_fingerprint, targets, created_by)
     VALUES ($1, $2, $3, $4, 'http://127.0.0.1:1', 'v1:k1:sealed', 'fp_test', $5, 'test')`,
    [id, orgId, fields.kind, fields.accountKey, fields.targets ?? []],
  );
  return id;
}

export async function startTask(rt: TestRuntime, orgId: string, replyTo: ReplyAddress | null, workflow = "answer"): Promise<string> {
  const { taskId } = await rt.tasks.start({ orgId, workflow, replyTo });
  return taskId;
}

export interface ReplyRow {
  id: string;
  state: string;
  code: string | null;
  message: string | null;
  text: string;
  text_sha256: string;
  connection_id: string | null;
  approval_id: string | null;
  actor: string;
  step_id: string | null;
  address_display: string | null;
  request_id: string;
}

/** Applies a reply request through the engine (as the API would) and returns the engine's result. */
export async function requestReply(
  rt: TestRuntime,
  orgId: string,
  taskId: string,
  text: string,
  options: { key?: string; sender?: EventSender; stepId?: string | null; attempt?: number; requestId?: string } = {},
): Promise<{ requestId: string; result: ApplyResult }> {
  const requestId = options.requestId ?? randomUUID();
  const result = await rt.engine.apply(rt.pool, [
    {
      orgId,
      taskId,
      event: {
        type: "reply_request",
        eventId: `reply:${requestId}`,
        stepId: options.stepId ?? null,
        attempt: options.attempt ?? 0,
        sender: options.sender ?? { kind: "api", actor: "user:ann" },
        text,
        idempotencyKey: options.key ?? defaultReplyKey(taskId, text),
        requestId,
      },
    },
  ]);
  return { requestId, result };
}

export async function replyRows(rt: TestRuntime, taskId: string): Promise<ReplyRow[]> {
  const { rows } = await rt.pool.query<ReplyRow>(
    `SELECT id, state, code, message, text, text_sha256, connection_id, approval_id, actor, step_id, address_display, request_id
     FROM origin_replies WHERE task_id = $1 ORDER BY created_at, id`,
    [taskId],
  );
  return rows;
}

export async function auditRows(rt: TestRuntime, orgId: string, taskId: string): Promise<Array<Record<string, unknown>>> {
  const { rows } = await rt.pool.query("SELECT * FROM audit_log WHERE org_id = $1 AND task_id = $2 ORDER BY seq", [orgId, taskId]);
  return rows;
}
