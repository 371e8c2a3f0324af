/**
 * Audit rows, verification results and checkpoints ↔ switchyard.api.v1 audit messages.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AuditRow } from "../../domain.js";
import type {
  AuditRow as ProtoAuditRow,
  AuditRowSchema,
  AuditServiceVerifyResponse,
  AuditServiceVerifyResponseSchema,
  Checkpoint as ProtoCheckpoint,
  CheckpointSchema,
} from "../../gen/switchyard/api/v1/audit_pb.js";
import type { VerifyWithCheckpointsResult } from "../../governance/checkpoint-verify.js";
import type { Checkpoint } from "../../governance/checkpoint-signing.js";
import { int64ToNumber } from "./values.js";

export function auditRowToProto(row: AuditRow): MessageInitShape<typeof AuditRowSchema> {
  return { ...row, seq: BigInt(row.seq), atMs: BigInt(row.atMs) };
}

export function auditRowFromProto(row: ProtoAuditRow): AuditRow {
  return {
    orgId: row.orgId,
    seq: int64ToNumber(row.seq),
    prevHash: row.prevHash,
    hash: row.hash,
    action: row.action,
    actor: row.actor,
    destination: row.destination,
    verdict: row.verdict,
    rule: row.rule,
    reason: row.reason,
    payloadHash: row.payloadHash,
    cost: row.cost,
    taskId: row.taskId,
    stepId: row.stepId,
    envelopeId: row.envelopeId,
    atMs: int64ToNumber(row.atMs),
  };
}

export function verificationToProto(orgId: string, result: VerifyWithCheckpointsResult): MessageInitShape<typeof AuditServiceVerifyResponseSchema> {
  return {
    orgId,
    ok: result.ok,
    rows: BigInt(result.rows),
    headSeq: BigInt(result.headSeq),
    ...(result.firstBroken ? { firstBroken: { seq: BigInt(result.firstBroken.seq), reason: result.firstBroken.reason } } : {}),
    checkpoints: {
      table: result.checkpoints.table,
      ...(result.checkpoints.file !== undefined ? { file: result.checkpoints.file } : {}),
      signedSeq: BigInt(result.checkpoints.signedSeq),
    },
  };
}

/** The verification as direct mode returns it (same keys, same order). */
export function verificationFromProto(response: AuditServiceVerifyResponse): { tenant: string; result: VerifyWithCheckpointsResult } {
  const coverage = response.checkpoints;
  const checkpoints = {
    table: coverage?.table ?? 0,
    ...(coverage?.file !== undefined ? { file: coverage.file } : {}),
    signedSeq: int64ToNumber(coverage?.signedSeq ?? 0n),
  };
  const base = { ok: response.ok, rows: int64ToNumber(response.rows), headSeq: int64ToNumber(response.headSeq) };
  const result: VerifyWithCheckpointsResult = response.firstBroken
    ? { ...base, firstBroken: { seq: int64ToNumber(response.firstBroken.seq), reason: response.firstBroken.reason }, checkpoints }
    : { ...base, checkpoints };
  return { tenant: response.orgId, result };
}

export function checkpointToProto(checkpoint: Checkpoint): MessageInitShape<typeof CheckpointSchema> {
  return { ...checkpoint, seq: BigInt(checkpoint.seq), atMs: BigInt(checkpoint.atMs) };
}

export function checkpointFromProto(checkpoint: ProtoCheckpoint): Checkpoint {
  return {
    orgId: checkpoint.orgId,
    seq: int64ToNumber(checkpoint.seq),
    hash: checkpoint.hash,
    atMs: int64ToNumber(checkpoint.atMs),
    kid: checkpoint.kid,
    signature: checkpoint.signature,
  };
}
