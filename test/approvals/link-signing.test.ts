/**
 * Signed one-click approval links: per-tenant rotatable keys, constant-time verification, single use, and one
 * decision however many routes race to make it.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createApprovalLinks,
  linkRefusalOf,
  redeemApprovalLink,
  signLinkToken,
  verifyLinkToken,
  type LinkRefusal,
} from "../../src/approvals/link-signing.js";
import { ensureLinkKey, getLinkKey, listLinkKeys, retireLinkKey, rotateLinkKey } from "../../src/store/approvals/postgres-link-key-store.js";
import { isSwitchyardError } from "../../src/errors.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { Workers } from "../support/workers.js";
import { approvalAuditRows, approvalOf, parkTask, snapshot, submitGated } from "./helpers.js";

const ORG = "acme";
const OTHER = "globex";
const BASE = "https://switchyard.example";

function tokenOf(url: string): string {
  return new URL(url).searchParams.get("token")!;
}

async function refusalOf(promise: Promise<unknown>): Promise<LinkRefusal | "not_found" | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    if (isSwitchyardError(error, "NOT_FOUND")) return "not_found";
    const refusal = linkRefusalOf(error);
    if (!refusal) throw error;
    return refusal;
  }
}

/** Re-encodes a token's claims with one field changed, keeping the original signature. */
function tamper(token: string, change: Record<string, unknown>): string {
  const [payload, sig] = token.split(".") as [string, string];
  const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as Record<string, unknown>;
  return `${Buffer.from(JSON.stringify({ ...claims, ...change })).toString("base64url")}.${sig}`;
}

describe("approval links", () => {
  let rt: TestRuntime;
  const deps = () => ({ pool: rt.pool, stores: rt.stores, tasks: rt.tasks });
  beforeAll(async () => {
    rt = await createTestRuntime();
    await submitGated(rt, ORG, OTHER);
  });
  afterAll(async () => {
    await rt.cleanup();
  });

  it("approves by link: decided once as link:<kid> via link, the step resumes, the token is recorded", async () => {
    const { taskId, approvalId } = await parkTask(rt, ORG);
    const links = await createApprovalLinks(rt.stores, rt.pool, { orgId: ORG, approvalId, baseUrl: `${BASE}/` });
    expect(links.approveUrl.startsWith(`${BASE}/approvals/decide?token=`)).toBe(true);
    expect(links.denyUrl.startsWith(`${BASE}/approvals/decide?token=`)).toBe(true);
    const token = tokenOf(links.approveUrl);
    expect(await verifyLinkToken(rt.stores.linkKeys, rt.pool, token, Date.now())).toEqual({
      approvalId,
      decision: "approve",
      expiresAtMs: Date.parse(links.expiresAt),
      kid: links.kid,
      orgId: ORG,
    });

    const outcome = await redeemApprovalLink(deps(), token);
    expect(outcome).toEqual({ approvalId, orgId: ORG, decision: "approve", status: "approved", decidedBy: `link:${links.kid}`, alreadyDecided: false });
    expect(await approvalOf(rt.pool, ORG, approvalId)).toMatchObject({ status: "approved", decidedBy: `link:${links.kid}`, decidedVia: "link" });
    const task = await rt.tasks.get(ORG, taskId);
    expect(task.steps[0]!.status).toBe("dispatched");
    const used = await rt.pool.query("SELECT token_hash, org_id, subject FROM used_link_tokens WHERE subject = $1", [`approval:${approvalId}`]);
    expect(used.rows).toEqual([{ token_hash: createHash("sha256").update(token).digest("hex"), org_id: ORG, subject: `approval:${approvalId}` }]);
    const audit = await listAudit(rt.pool, ORG, { taskId });
    expect(audit.map((a) => `${a.action}:${a.verdict}:${a.actor}`)).toEqual([
      "dispatch:requires_approval:coordinator",
      `approval:approved:link:${links.kid}`,
      "dispatch:allow:coordinator",
    ]);

    // Single use: the same link again, and the deny link afterwards, answer with the first outcome.
    const before = await snapshot(rt, ORG, taskId, approvalId);
    expect(await redeemApprovalLink(deps(), token)).toMatchObject({ status: "approved", decidedBy: `link:${links.kid}`, alreadyDecided: true });
    expect(await redeemApprovalLink(deps(), tokenOf(links.denyUrl))).toMatchObject({ decision: "deny", status: "approved", alreadyDecided: true });
    expect(await snapshot(rt, ORG, taskId, approvalId)).toEqual(before);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("denies by link: the step fails closed with POLICY_DENIED", async () => {
    const { taskId, approvalId } = await parkTask(rt, ORG);
    const links = await createApprovalLinks(rt.stores, rt.pool, { orgId: ORG, approvalId, baseUrl: BASE });
    expect(await redeemApprovalLink(deps(), tokenOf(links.denyUrl))).toMatchObject({ status: "denied", alreadyDecided: false });
    const task = await rt.tasks.get(ORG, taskId);
    expect(task.status).toBe("failed");
    expect(task.steps[0]!.error).toMatchObject({ code: "POLICY_DENIED" });
    expect((await approvalAuditRows(rt, ORG, taskId)).map((r) => r.verdict)).toEqual(["denied"]);
  });

  it("refuses forged, tampered, wrong-tenant, expired, unknown-key and retired-key links and changes nothing", async () => {
    const { taskId, approvalId } = await parkTask(rt, ORG);
    const theirs = await parkTask(rt, OTHER);
    const links = await createApprovalLinks(rt.stores, rt.pool, { orgId: ORG, approvalId, baseUrl: BASE });
    const deny = tokenOf(links.denyUrl);
    const key = (await getLinkKey(rt.pool, ORG, links.kid))!;
    const [payload, sig] = deny.split(".") as [string, string];
    const flipped = sig[0] === "A" ? `B${sig.slice(1)}` : `A${sig.slice(1)}`;

    const before = await snapshot(rt, ORG, taskId, approvalId);
    const theirsBefore = await snapshot(rt, OTHER, theirs.taskId, theirs.approvalId);
    const cases: Array<[string, string, LinkRefusal | "not_found"]> = [
      ["forged signature", `${payload}.${flipped}`, "forged"],
      ["signature of another payload", `${payload}.${tokenOf(links.approveUrl).split(".")[1]}`, "forged"],
      ["tampered decision", tamper(deny, { d: "approve" }), "forged"],
      ["tampered expiry", tamper(deny, { e: Date.now() + 10 * 86_400_000 }), "forged"],
      ["tampered approval", tamper(deny, { a: theirs.approvalId }), "forged"],
      ["tampered tenant", tamper(deny, { o: OTHER }), "unknown_key"],
      ["unknown kid", tamper(deny, { k: "ffffffffffff" }), "unknown_key"],
      // Signed with acme's real key, but for globex's approval: the approval is not acme's.
      ["wrong tenant", signLinkToken(key, { approvalId: theirs.approvalId, decision: "approve", expiresAtMs: Date.now() + 60_000, orgId: ORG }), "not_found"],
      ["expired", signLinkToken(key, { approvalId, decision: "approve", expiresAtMs: Date.now() - 1, orgId: ORG }), "expired"],
      ["malformed", "not-a-token", "malformed"],
      ["malformed claims", `${Buffer.from("{}").toString("base64url")}.${sig}`, "malformed"],
      ["non-canonical signature", `${payload}.${sig}=`, "malformed"],
      ["three parts", `${deny}.x`, "malformed"],
    ];
    for (const [what, token, expected] of cases) {
      expect({ what, refusal: await refusalOf(redeemApprovalLink(deps(), token)) }).toEqual({ what, refusal: expected });
    }
    // A valid link past its expiry (the clock moved on) is refused too.
    expect(await refusalOf(redeemApprovalLink({ ...deps(), clock: () => Date.parse(links.expiresAt) }, deny))).toBe("expired");
    expect(await snapshot(rt, ORG, taskId, approvalId)).toEqual(before);
    expect(await snapshot(rt, OTHER, theirs.taskId, theirs.approvalId)).toEqual(theirsBefore);
    expect(before.approval.status).toBe("pending");
    expect(theirsBefore.approval.status).toBe("pending");
    // The genuine link still works afterwards.
    expect(await redeemApprovalLink(deps(), deny)).toMatchObject({ status: "denied", alreadyDecided: false });
  });

  it("bounds a link's life by its approval's deadline", async () => {
    const { approvalId } = await parkTask(rt, ORG);
    const approval = await approvalOf(rt.pool, ORG, approvalId);
    const now = Date.now();
    const short = await createApprovalLinks(rt.stores, rt.pool, { orgId: ORG, approvalId, baseUrl: BASE, ttlMs: 60_000, nowMs: now });
    expect(short.expiresAt).toBe(new Date(now + 60_000).toISOString());
    const long = await createApprovalLinks(rt.stores, rt.pool, { orgId: ORG, approvalId, baseUrl: BASE, ttlMs: 7 * 86_400_000, nowMs: now });
    expect(long.expiresAt).toBe(approval.expiresAt);
    // No links for an approval that is decided or that is not the tenant's.
    await rt.tasks.decideApproval({ orgId: ORG, approvalId, approve: false, actor: "user:ann", via: "api" });
    await expect(createApprovalLinks(rt.stores, rt.pool, { orgId: ORG, approvalId, baseUrl: BASE })).rejects.toMatchObject({ code: "FAILED_PRECONDITION" });
    const theirs = await parkTask(rt, OTHER);
    await expect(createApprovalLinks(rt.stores, rt.pool, { orgId: ORG, approvalId: theirs.approvalId, baseUrl: BASE })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(createApprovalLinks(rt.stores, rt.pool, { orgId: OTHER, approvalId: theirs.approvalId, baseUrl: "ftp://x" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("rotates keys: old links work until their key is retired, new links use the new key", async () => {
    const org = "rotors";
    await submitGated(rt, org);
    const first = await ensureLinkKey(rt.pool, org);
    expect((await ensureLinkKey(rt.pool, org)).kid).toBe(first.kid);
    const a = await parkTask(rt, org);
    const b = await parkTask(rt, org);
    const c = await parkTask(rt, org);
    const oldA = await createApprovalLinks(rt.stores, rt.pool, { orgId: org, approvalId: a.approvalId, baseUrl: BASE });
    const oldB = await createApprovalLinks(rt.stores, rt.pool, { orgId: org, approvalId: b.approvalId, baseUrl: BASE });
    expect(oldA.kid).toBe(first.kid);

    const kid = await rotateLinkKey(rt.pool, org);
    expect(kid).not.toBe(first.kid);
    const fresh = await createApprovalLinks(rt.stores, rt.pool, { orgId: org, approvalId: c.approvalId, baseUrl: BASE });
    expect(fresh.kid).toBe(kid);
    expect((await listLinkKeys(rt.pool, org)).map((k) => [k.kid, k.signing, k.retiredAt])).toEqual([
      [kid, true, null],
      [first.kid, false, null],
    ]);

    // Signed before the rotation, still good after it.
    expect(await redeemApprovalLink(deps(), tokenOf(oldA.approveUrl))).toMatchObject({ status: "approved", decidedBy: `link:${first.kid}`, alreadyDecided: false });

    await retireLinkKey(rt.pool, org, first.kid);
    const before = await snapshot(rt, org, b.taskId, b.approvalId);
    expect(await refusalOf(redeemApprovalLink(deps(), tokenOf(oldB.approveUrl)))).toBe("retired_key");
    expect(await snapshot(rt, org, b.taskId, b.approvalId)).toEqual(before);
    expect(await redeemApprovalLink(deps(), tokenOf(fresh.denyUrl))).toMatchObject({ status: "denied", decidedBy: `link:${kid}` });
    // Links for b are now signed with the new key.
    expect((await createApprovalLinks(rt.stores, rt.pool, { orgId: org, approvalId: b.approvalId, baseUrl: BASE })).kid).toBe(kid);
    await expect(retireLinkKey(rt.pool, org, "000000000000")).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(retireLinkKey(rt.pool, ORG, kid)).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("decides once and resumes once when links, the API and the CLI race", async () => {
    const org = "racers";
    await submitGated(rt, org);
    rt.startCoordinator();
    const workers = new Workers(rt);
    const runs = new Map<string, number>();
    workers.start("publisher", async (work) => {
      runs.set(work.taskId, (runs.get(work.taskId) ?? 0) + 1);
      return "published";
    });
    try {
      for (let round = 0; round < 6; round++) {
        const { taskId, approvalId } = await parkTask(rt, org);
        const links = await createApprovalLinks(rt.stores, rt.pool, { orgId: org, approvalId, baseUrl: BASE });
        const approve = tokenOf(links.approveUrl);
        const outcomes = await Promise.all([
          redeemApprovalLink(deps(), approve),
          rt.tasks.decideApproval({ orgId: org, approvalId, approve: false, actor: "user:api", via: "api" }),
          redeemApprovalLink(deps(), tokenOf(links.denyUrl)),
          redeemApprovalLink(deps(), approve),
          rt.tasks.decideApproval({ orgId: org, approvalId, approve: true, actor: "cli", via: "cli" }),
        ]);
        const winners = outcomes.filter((o) => !o.alreadyDecided);
        expect(winners).toHaveLength(1);
        const winner = winners[0]!;
        for (const o of outcomes) expect({ status: o.status, decidedBy: o.decidedBy }).toEqual({ status: winner.status, decidedBy: winner.decidedBy });

        const task = await waitForTask(rt.tasks, org, taskId, { until: (t) => ["completed", "failed"].includes(t.status) });
        expect(task.status).toBe(winner.status === "approved" ? "completed" : "failed");
        expect(await approvalAuditRows(rt, org, taskId)).toHaveLength(1);
        const approval = await approvalOf(rt.pool, org, approvalId);
        expect(approval).toMatchObject({ status: winner.status, decidedBy: winner.decidedBy });
        expect(approval.decidedVia).toBe(winner.decidedBy.startsWith("link:") ? "link" : winner.decidedBy === "cli" ? "cli" : "api");
        const used = await rt.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM used_link_tokens WHERE subject = $1", [`approval:${approvalId}`]);
        expect(used.rows[0]!.n).toBe(approval.decidedVia === "link" ? 1 : 0);
        const resumes = (await listAudit(rt.pool, org, { taskId })).filter((a) => a.action === "dispatch" && a.verdict === "allow");
        expect(resumes).toHaveLength(winner.status === "approved" ? 1 : 0);
        // The worker ran at most once, only for an approval (give a duplicate a moment to show up).
        await new Promise((r) => setTimeout(r, 100));
        expect(runs.get(taskId) ?? 0).toBe(winner.status === "approved" ? 1 : 0);
      }
      expect((await verifyChain(rt.stores.audit, rt.pool, org)).ok).toBe(true);
    } finally {
      await workers.stop();
    }
  });
});
