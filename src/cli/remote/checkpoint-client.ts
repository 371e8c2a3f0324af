/**
 * CheckpointApi as a client of the CheckpointService over any transport (in-process in direct mode:
 * checkpoint-api.ts). With an operator's key, the head is signed here and only the signature travels.
 */
import { createClient, type Transport } from "@connectrpc/connect";
import { CheckpointService } from "../../gen/switchyard/api/v1/checkpoints_pb.js";
import { checkpointToProto } from "../../gateway/convert/audit.js";
import { checkpointKeyFromProto, signOutcomeFromProto } from "../../gateway/convert/checkpoints.js";
import { int64ToNumber } from "../../gateway/convert/values.js";
import { parseOperatorKey, signCheckpoint } from "../../governance/checkpoint-signing.js";
import type { CheckpointApi } from "./checkpoint-api.js";
import { callerAt } from "./remote-api.js";

export function createClientCheckpointApi(transport: Transport, options: { where: string }): CheckpointApi {
  const checkpoints = createClient(CheckpointService, transport);
  const call = callerAt(options.where);

  return {
    async sign(orgId, signOptions = {}) {
      if (signOptions.operatorKeyPem === undefined) return signOutcomeFromProto(await call(() => checkpoints.sign({ orgId })));
      const key = parseOperatorKey(signOptions.operatorKeyPem);
      const head = await call(() => checkpoints.head({ orgId, publicKey: key.publicKey }));
      const seq = int64ToNumber(head.seq);
      if (seq === 0) return { status: "unchanged" };
      const signed = signCheckpoint({ orgId, seq, hash: head.hash, atMs: Date.now() }, key);
      return signOutcomeFromProto(await call(() => checkpoints.store({ checkpoint: checkpointToProto(signed), publicKey: key.publicKey })));
    },
    async exportCheckpoints(orgId) {
      return (await call(() => checkpoints.export({ orgId: orgId ?? "" }))).jsonl;
    },
    async rotateKey() {
      return (await call(() => checkpoints.rotateKey({}))).kid;
    },
    async listKeys() {
      return (await call(() => checkpoints.listKeys({}))).keys.map(checkpointKeyFromProto);
    },
  };
}
