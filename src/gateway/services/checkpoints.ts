/**
 * CheckpointService: signing tenants' audit chain heads, exporting every tenant's checkpoints, and the signing keys.
 * Admin keys only: the auth interceptor lets no tenant key in (it is in ADMIN_SERVICES), and each handler checks
 * the admin principal again. A key held outside Switchyard never reaches it: Head answers what to sign, the holder
 * signs where it runs, Store takes the signature.
 */
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import type { CheckpointService } from "../../gen/switchyard/api/v1/checkpoints_pb.js";
import { activeSigningKey, checkpointKeyId, listCheckpointKeys, parseCheckpointPublicKey, registerPublicKey, rotateCheckpointKey } from "../../governance/checkpoint-keys.js";
import { exportCheckpoints, signHead, storeSignedCheckpoint } from "../../governance/checkpoints.js";
import { adminCall } from "../auth.js";
import { checkpointFromProto } from "../convert/audit.js";
import { checkpointKeyToProto, signOutcomeToProto } from "../convert/checkpoints.js";
import type { ServiceDeps } from "./deps.js";

/** The tenant a call names (`org_id`), from an admin. */
function namedTenant(ctx: HandlerContext, orgId: string): string {
  adminCall(ctx);
  const value = orgId.trim();
  if (!value) throw new SwitchyardError(ErrorCode.InvalidArgument, "org_id: name the tenant whose chain to sign", { details: { path: "org_id" } });
  return value;
}

export function checkpointService(deps: ServiceDeps): ServiceImpl<typeof CheckpointService> {
  const { pool, stores } = deps;
  return {
    async sign(req, ctx) {
      const orgId = namedTenant(ctx, req.orgId);
      const key = await activeSigningKey(stores, pool);
      return signOutcomeToProto(await signHead(stores, pool, orgId, { key, now: Date.now(), wait: true, signal: ctx.signal }));
    },

    async head(req, ctx) {
      const orgId = namedTenant(ctx, req.orgId);
      const publicKey = parseCheckpointPublicKey(req.publicKey);
      await registerPublicKey(stores, pool, { kid: checkpointKeyId(publicKey), publicKey: req.publicKey });
      const head = await stores.audit.head(pool, orgId);
      return { seq: BigInt(head?.seq ?? 0), hash: head?.hash ?? "" };
    },

    async store(req, ctx) {
      adminCall(ctx);
      if (!req.checkpoint) throw new SwitchyardError(ErrorCode.InvalidArgument, "checkpoint: required", { details: { path: "checkpoint" } });
      const checkpoint = checkpointFromProto(req.checkpoint);
      namedTenant(ctx, checkpoint.orgId);
      return signOutcomeToProto(await storeSignedCheckpoint(stores, pool, checkpoint, req.publicKey, { signal: ctx.signal }));
    },

    async export(req, ctx) {
      adminCall(ctx);
      const orgId = req.orgId.trim();
      return { jsonl: await exportCheckpoints(stores, pool, orgId === "" ? undefined : orgId) };
    },

    async listKeys(_req, ctx) {
      adminCall(ctx);
      return { keys: (await listCheckpointKeys(stores, pool)).map(checkpointKeyToProto) };
    },

    async rotateKey(_req, ctx) {
      adminCall(ctx);
      return { kid: await rotateCheckpointKey(stores, pool) };
    },
  };
}
