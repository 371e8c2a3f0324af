/**
 * `switchyard approval link | keys | rotate-key | retire-key`, and the CLI's decisions recorded as via `cli`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { linkRefusalOf, redeemApprovalLink } from "../../src/approvals/link-signing.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import { testConfig } from "../support/runtime.js";
import { APPROVAL_WORKFLOW, createCliEnvironment, type CliEnvironment } from "../cli/helpers.js";
import { approvalOf } from "./helpers.js";

let cli: CliEnvironment;
let rt: Runtime | undefined;

beforeAll(async () => {
  cli = await createCliEnvironment();
  const file = await cli.file("approval.yaml", APPROVAL_WORKFLOW);
  expect((await cli.run(["workflow", "submit", file, "--tenant", "acme"])).code).toBe(0);
});
afterAll(async () => {
  await rt?.close();
  await cli.cleanup();
});

async function parked(): Promise<string> {
  const taskId = (await cli.run(["task", "start", "needs-approval", "--tenant", "acme"])).last;
  return JSON.parse((await cli.run(["task", "get", taskId, "--tenant", "acme", "--json"])).last).steps[0].approvalId as string;
}

/** A runtime on the CLI's database, to redeem links the way the gateway would. */
async function runtime(): Promise<Runtime> {
  rt ??= await createRuntime(testConfig(cli.db, cli.redis.prefix));
  return rt;
}

describe("approval link commands", () => {
  it("prints approve and deny links under the base URL, and refuses a decided approval", async () => {
    const approvalId = await parked();
    const text = await cli.run(["approval", "link", approvalId, "--tenant", "acme"]);
    expect(text.code).toBe(0);
    expect(text.lines[0]).toMatch(/^approve: http:\/\/127\.0\.0\.1:8080\/approvals\/decide\?token=[\w-]+\.[\w-]+$/);
    expect(text.lines[1]).toMatch(/^deny: {4}http:\/\/127\.0\.0\.1:8080\/approvals\/decide\?token=[\w-]+\.[\w-]+$/);
    expect(text.lines[2]).toMatch(/^expires: \S+Z \(key [0-9a-f]{12}\)$/);
    // The deployment's public URL is the default base.
    const deployed = await cli.run(["approval", "link", approvalId, "--tenant", "acme"], { env: { SWITCHYARD_PUBLIC_URL: "https://sy.example/base" } });
    expect(deployed.lines[0]).toMatch(/^approve: https:\/\/sy\.example\/base\/approvals\/decide\?token=/);

    const json = await cli.run(["approval", "link", approvalId, "--tenant", "acme", "--base-url", "https://gw.example/sy/", "--ttl", "60", "--json"]);
    const links = JSON.parse(json.last);
    expect(links).toEqual({ approvalId, approveUrl: expect.stringMatching(/^https:\/\/gw\.example\/sy\/approvals\/decide\?token=/), denyUrl: expect.any(String), expiresAt: expect.any(String), kid: expect.any(String) });
    expect(Date.parse(links.expiresAt) - Date.now()).toBeLessThanOrEqual(60_000);

    const outcome = await redeemApprovalLink({ pool: cli.db.pool, stores: (await runtime()).stores, tasks: (await runtime()).tasks }, new URL(links.approveUrl).searchParams.get("token")!);
    expect(outcome).toMatchObject({ status: "approved", alreadyDecided: false });

    const decided = await cli.run(["approval", "link", approvalId, "--tenant", "acme"]);
    expect(decided.code).toBe(1);
    expect(decided.stderr).toMatch(/^error: FAILED_PRECONDITION: approval .* is already approved by link:/);
    const wrongTenant = await cli.run(["approval", "link", approvalId, "--tenant", "other"]);
    expect(wrongTenant.code).toBe(1);
    expect(wrongTenant.stderr).toMatch(/^error: NOT_FOUND: /);
    const badBase = await cli.run(["approval", "link", approvalId, "--tenant", "acme", "--base-url", "nope"]);
    expect(badBase.code).toBe(2);
  });

  it("rotates and retires keys: a retired key's links stop working", async () => {
    const approvalId = await parked();
    const old = JSON.parse((await cli.run(["approval", "link", approvalId, "--tenant", "acme", "--json"])).last);
    const rotated = await cli.run(["approval", "rotate-key", "--tenant", "acme", "--json"]);
    expect(rotated.code).toBe(0);
    const { kid } = JSON.parse(rotated.last) as { kid: string };
    expect(kid).not.toBe(old.kid);
    const keys = JSON.parse((await cli.run(["approval", "keys", "--tenant", "acme", "--json"])).last).keys;
    expect(keys.map((k: { kid: string; signing: boolean }) => [k.kid, k.signing])).toEqual([
      [kid, true],
      [old.kid, false],
    ]);
    expect(JSON.parse((await cli.run(["approval", "link", approvalId, "--tenant", "acme", "--json"])).last).kid).toBe(kid);

    const retired = await cli.run(["approval", "retire-key", old.kid, "--tenant", "acme"]);
    expect(retired.code).toBe(0);
    expect(retired.last).toMatch(new RegExp(`^retired link key ${old.kid} at `));
    const error = await redeemApprovalLink({ pool: cli.db.pool, stores: (await runtime()).stores, tasks: (await runtime()).tasks }, new URL(old.approveUrl).searchParams.get("token")!).catch((e: unknown) => e);
    expect(linkRefusalOf(error)).toBe("retired_key");
    expect((await approvalOf(cli.db.pool, "acme", approvalId)).status).toBe("pending");
    const unknown = await cli.run(["approval", "retire-key", "000000000000", "--tenant", "acme"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error: NOT_FOUND: /);
    const table = await cli.run(["approval", "keys", "--tenant", "acme"]);
    expect(table.lines[0]).toMatch(/^KID\s+CREATED\s+RETIRED\s+SIGNING$/);
  });

  it("records CLI decisions as via cli", async () => {
    const approvalId = await parked();
    expect((await cli.run(["approval", "deny", approvalId, "--tenant", "acme", "--actor", "carol"])).code).toBe(0);
    expect(await approvalOf(cli.db.pool, "acme", approvalId)).toMatchObject({ status: "denied", decidedBy: "carol", decidedVia: "cli" });
    const listed = JSON.parse((await cli.run(["approval", "list", "--tenant", "acme", "--status", "denied", "--json"])).last).approvals;
    expect(listed).toContainEqual(expect.objectContaining({ id: approvalId, decidedVia: "cli", expiresAt: expect.any(String) }));
  });
});
