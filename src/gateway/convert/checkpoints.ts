/**
 * CheckpointService's answers ↔ what the signer and the key table return (governance/checkpoints.ts, checkpoint-keys.ts).
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { CheckpointSignStatus, type CheckpointKey, type CheckpointKeySchema, type CheckpointServiceSignResponse } from "../../gen/switchyard/api/v1/checkpoints_pb.js";
import type { CheckpointSchema } from "../../gen/switchyard/api/v1/audit_pb.js";
import type { SignOutcome } from "../../governance/checkpoints.js";
import type { CheckpointKeyInfo } from "../../store/audit/checkpoint-store.js";
import { checkpointFromProto, checkpointToProto } from "./audit.js";
import { enumMapping, fromTimestamp, int64ToNumber, toTimestamp } from "./values.js";

export type { SignOutcome };

const signStatuses = enumMapping<SignOutcome["status"], CheckpointSignStatus>("checkpoint sign status", [
  ["signed", CheckpointSignStatus.SIGNED],
  ["unchanged", CheckpointSignStatus.UNCHANGED],
  ["refused", CheckpointSignStatus.REFUSED],
]);

/** Sign's and Store's answers (the same fields). */
export function signOutcomeToProto(outcome: SignOutcome): {
  status: CheckpointSignStatus;
  checkpoint?: MessageInitShape<typeof CheckpointSchema>;
  broken?: { seq: bigint; reason: string };
} {
  if (outcome.status === "refused") return { status: signStatuses.toProto("refused"), broken: { seq: BigInt(outcome.broken.seq), reason: outcome.broken.reason } };
  return { status: signStatuses.toProto(outcome.status), ...(outcome.checkpoint ? { checkpoint: checkpointToProto(outcome.checkpoint) } : {}) };
}

/** Sign's and Store's answers (the same fields). */
export function signOutcomeFromProto(response: Pick<CheckpointServiceSignResponse, "status" | "checkpoint" | "broken">): SignOutcome {
  const status = signStatuses.fromProto(response.status);
  if (status === "refused") return { status, broken: { seq: int64ToNumber(response.broken?.seq ?? 0n), reason: response.broken?.reason ?? "" } };
  const checkpoint = response.checkpoint ? checkpointFromProto(response.checkpoint) : undefined;
  if (status === "signed") {
    if (!checkpoint) throw new SwitchyardError(ErrorCode.Internal, "a signed checkpoint was answered without the checkpoint");
    return { status, checkpoint };
  }
  return checkpoint ? { status, checkpoint } : { status };
}

export function checkpointKeyToProto(key: CheckpointKeyInfo): MessageInitShape<typeof CheckpointKeySchema> {
  return { kid: key.kid, publicKey: key.publicKey, createdAt: toTimestamp(key.createdAt), retiredAt: toTimestamp(key.retiredAt), hasPrivateKey: key.hasPrivateKey };
}

export function checkpointKeyFromProto(key: CheckpointKey): CheckpointKeyInfo {
  return { kid: key.kid, publicKey: key.publicKey, createdAt: fromTimestamp(key.createdAt)!, retiredAt: fromTimestamp(key.retiredAt), hasPrivateKey: key.hasPrivateKey };
}
