/**
 * ApprovalService's links and link keys (issue 27 §4: `approval link|keys|rotate-key|retire-key` run these handlers,
 * in-process in direct mode): through a gateway a tenant key signs links for its own approvals only, under the
 * gateway's public URL unless it names one, and manages only its own keys.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redeemApprovalLink } from "../../src/approvals/link-signing.js";
import { ApprovalService } from "../../src/gen/switchyard/api/v1/approvals_pb.js";
import { parkTask, submitGated } from "../approvals/helpers.js";
import { createGatewayFixture, type GatewayFixture } from "./fixture.js";

async function codeOf(promise: Promise<unknown>): Promise<Code | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return ConnectError.from(error).code;
  }
}

describe("ApprovalService links through a gateway", () => {
  let fx: GatewayFixture;
  let acme: string;
  let globex: string;
  beforeAll(async () => {
    fx = await createGatewayFixture();
    acme = await fx.tenant("acme");
    globex = await fx.tenant("globex");
    await submitGated(fx.rt, "acme");
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  it("signs links for the key's own pending approval, under the gateway's public URL unless one is named", async () => {
    const { approvalId } = await parkTask(fx.rt, "acme");
    const approvals = fx.client(ApprovalService, acme);
    const links = await approvals.createLinks({ approvalId });
    expect(links.approveUrl.startsWith(`${fx.rt.config.gateway.publicUrl}/approvals/decide?token=`)).toBe(true);
    expect(links.expiresAt).toBeDefined();
    const named = await approvals.createLinks({ approvalId, baseUrl: "https://gw.example/sy/", ttlMs: 60_000n });
    expect(named.denyUrl).toMatch(/^https:\/\/gw\.example\/sy\/approvals\/decide\?token=/);
    expect(named.kid).toBe(links.kid);

    const outcome = await redeemApprovalLink({ pool: fx.rt.pool, stores: fx.rt.stores, tasks: fx.rt.tasks }, new URL(named.approveUrl).searchParams.get("token")!);
    expect(outcome).toMatchObject({ status: "approved", alreadyDecided: false });
    expect(await codeOf(approvals.createLinks({ approvalId }))).toBe(Code.FailedPrecondition);
    expect(await codeOf(approvals.createLinks({ approvalId, baseUrl: "nope" }))).toBe(Code.InvalidArgument);
  });

  it("refuses another tenant's approval and keys: a key acts only for its own tenant", async () => {
    const { approvalId } = await parkTask(fx.rt, "acme");
    expect(await codeOf(fx.client(ApprovalService, globex).createLinks({ approvalId }))).toBe(Code.NotFound);
    expect(await codeOf(fx.client(ApprovalService, globex, { tenant: "acme" }).listLinkKeys({}))).toBe(Code.PermissionDenied);

    const acmeKeys = fx.client(ApprovalService, acme);
    const before = (await acmeKeys.listLinkKeys({})).keys;
    const { kid } = await acmeKeys.rotateLinkKey({});
    const after = (await acmeKeys.listLinkKeys({})).keys;
    expect(after.map((k) => [k.kid, k.signing])).toEqual([[kid, true], ...before.map((k) => [k.kid, false])]);
    expect((await fx.client(ApprovalService, globex).listLinkKeys({})).keys).toEqual([]);
    // Another tenant cannot retire acme's key: it has no key by that kid.
    expect(await codeOf(fx.client(ApprovalService, globex).retireLinkKey({ kid }))).toBe(Code.NotFound);
    const retired = await acmeKeys.retireLinkKey({ kid });
    expect(retired.kid).toBe(kid);
    expect(retired.retiredAt).toBeDefined();
  });
});
