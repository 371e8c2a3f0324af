import { createPublicKey, generateKeyPairSync } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkpointJobOf, createCheckpointJob, DEFAULT_CHECKPOINT_INTERVAL_MS } from "../../src/governance/checkpoint-job.js";
import { checkpointKeyId } from "../../src/governance/checkpoint-keys.js";
import { listCheckpoints } from "../../src/governance/checkpoints.js";
import { verifyChainWithCheckpoints } from "../../src/governance/checkpoint-verify.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { createCliEnvironment, ONE_STEP_WORKFLOW, type CliEnvironment } from "../cli/helpers.js";
import { createTestRuntime, waitFor } from "../support/runtime.js";
import { editReason, rewriteChain } from "./chain.js";
import { createPostgresStores } from "../../src/store/postgres-stores.js";

/** The storage ports the checkpoint signer and verifier take (runtime.stores in a process). */
const stores = createPostgresStores();

describe("switchyard audit checkpoint / checkpoints / verify --checkpoints", () => {
  let cli: CliEnvironment;
  beforeAll(async () => {
    cli = await createCliEnvironment();
    const file = await cli.file("one.yaml", ONE_STEP_WORKFLOW);
    expect((await cli.run(["workflow", "submit", file, "--tenant", "acme"])).code).toBe(0);
    for (let i = 0; i < 3; i++) expect((await cli.run(["task", "start", "one-step", "--tenant", "acme"])).code).toBe(0);
  });
  afterAll(async () => {
    await cli?.cleanup();
  });

  it("signs, exports, verifies against the export, and catches a rewrite only with the export", async () => {
    const empty = await cli.run(["audit", "checkpoint", "--tenant", "nobody"]);
    expect(empty).toMatchObject({ code: 0, last: "tenant nobody has no audit rows to sign" });

    const signed = await cli.run(["audit", "checkpoint", "--tenant", "acme", "--json"]);
    expect(signed.code).toBe(0);
    const outcome = JSON.parse(signed.last);
    expect(outcome).toMatchObject({ tenant: "acme", status: "signed", checkpoint: { orgId: "acme", seq: 3, kid: expect.stringMatching(/^ck_/) } });
    const again = await cli.run(["audit", "checkpoint", "--tenant", "acme"]);
    expect(again.last).toBe(`the audit head of tenant acme at seq 3 is already signed (key ${outcome.checkpoint.kid})`);

    const listed = JSON.parse((await cli.run(["audit", "checkpoints", "list", "--tenant", "acme", "--json"])).last);
    expect(listed.checkpoints).toEqual([outcome.checkpoint]);

    const exported = await cli.run(["audit", "checkpoints", "export", "--tenant", "acme", "--out", "acme.jsonl"]);
    expect(exported.code).toBe(0);
    expect(exported.last).toBe(`exported 1 checkpoint to ${join(cli.dir, "acme.jsonl")}`);
    const line = JSON.parse((await readFile(join(cli.dir, "acme.jsonl"), "utf8")).trim());
    expect(Object.keys(line)).toEqual(["org_id", "seq", "hash", "at_ms", "kid", "signature", "public_key"]);
    const toStdout = await cli.run(["audit", "checkpoints", "export"]);
    expect(toStdout.lines.map((l) => JSON.parse(l).seq)).toEqual([3]);

    const intact = await cli.run(["audit", "verify", "--tenant", "acme", "--checkpoints", "acme.jsonl"]);
    expect(intact.code).toBe(0);
    expect(intact.lines).toEqual([
      "checked 1 signed checkpoint in the table and 1 in acme.jsonl; signed up to seq 3",
      "audit chain of tenant acme is intact: 3 rows verified, head at seq 3",
    ]);
    const intactJson = await cli.run(["audit", "verify", "--tenant", "acme", "--checkpoints", "acme.jsonl", "--json"]);
    expect(JSON.parse(intactJson.last)).toEqual({ tenant: "acme", ok: true, rows: 3, headSeq: 3, checkpoints: { table: 1, file: 1, signedSeq: 3 } });

    // Rewrite the chain consistently and re-sign it with a fresh key.
    await rewriteChain(cli.db.pool, "acme", editReason(2, "never happened"));
    await cli.db.pool.query("DELETE FROM audit_checkpoints");
    await cli.db.pool.query("DELETE FROM checkpoint_keys");
    expect((await cli.run(["audit", "checkpoint", "--tenant", "acme"])).code).toBe(0);

    const plain = await cli.run(["audit", "verify", "--tenant", "acme", "--json"]);
    expect(plain.code).toBe(0);
    expect(JSON.parse(plain.last)).toMatchObject({ ok: true, checkpoints: { table: 1, signedSeq: 3 } });
    const caught = await cli.run(["audit", "verify", "--tenant", "acme", "--checkpoints", "acme.jsonl"]);
    expect(caught.code).toBe(1);
    expect(caught.last).toMatch(/^audit chain of tenant acme is BROKEN at seq 3: the chain's hash at seq 3 is [0-9a-f]{64} but acme\.jsonl line 1 /);
    expect(caught.stderr).toMatch(/^error: AUDIT_BROKEN: audit chain of tenant acme is broken at seq 3/);
    const caughtJson = JSON.parse((await cli.run(["audit", "verify", "--tenant", "acme", "--checkpoints", "acme.jsonl", "--json"])).last);
    expect(caughtJson).toMatchObject({ ok: false, firstBroken: { seq: 3, reason: expect.stringMatching(/rows 1\.\.3/) }, checkpoints: { file: 1 } });
  });

  it("rotates keys, lists them, and refuses a malformed checkpoints file with its line", async () => {
    const rotated = JSON.parse((await cli.run(["audit", "checkpoints", "rotate-key", "--json"])).last);
    expect(rotated.kid).toMatch(/^ck_[0-9a-f]{16}$/);
    const keys = JSON.parse((await cli.run(["audit", "checkpoints", "keys", "--json"])).last).keys;
    expect(keys[0]).toMatchObject({ kid: rotated.kid, retiredAt: null, hasPrivateKey: true });
    expect(keys.slice(1).every((k: { retiredAt: string | null; hasPrivateKey: boolean }) => k.retiredAt !== null && !k.hasPrivateKey)).toBe(true);

    const bad = await cli.file("bad.jsonl", '{"org_id":"acme","seq":3}\n');
    const refused = await cli.run(["audit", "verify", "--tenant", "acme", "--checkpoints", bad]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^error: INVALID_ARGUMENT: .*bad\.jsonl: checkpoints line 1: hash must be 64 lowercase hex digits/);
    const missing = await cli.run(["audit", "verify", "--tenant", "acme", "--checkpoints", "nope.jsonl"]);
    expect(missing.code).toBe(2);
  });
});

describe("the coordinator's checkpoint loop", () => {
  it("signs chain heads on its own while it runs", async () => {
    const rt = await createTestRuntime();
    try {
      await submitWorkflow(rt.pool, "acme", parseWorkflowDefinition("name: solo\nsteps:\n  - { id: only, to: \"role:nobody\" }\n"));
      rt.startCoordinator({ checkpoints: createCheckpointJob({ pool: rt.pool, stores: rt.stores, intervalMs: 50, everyRows: 1 }) });
      await rt.tasks.start({ orgId: "acme", workflow: "solo" });
      const [checkpoint] = await waitFor(async () => {
        const found = await listCheckpoints(stores, rt.pool, "acme");
        return found.length > 0 && found;
      }, { what: "a checkpoint" });
      expect(checkpoint!.seq).toBeGreaterThanOrEqual(1);
      expect((await verifyChainWithCheckpoints(stores, rt.pool, "acme")).ok).toBe(true);
    } finally {
      await rt.cleanup();
    }
  });

  it("runs the default job unless told not to", () => {
    const pool = {} as never;
    expect(checkpointJobOf({ pool, stores })?.intervalMs).toBe(DEFAULT_CHECKPOINT_INTERVAL_MS);
    expect(checkpointJobOf({ pool, stores, checkpoints: false })).toBeUndefined();
    const own = { intervalMs: 7, run: async () => 0 };
    expect(checkpointJobOf({ pool, stores, checkpoints: own })).toBe(own);
  });
});

describe("switchyard audit checkpoint --key-file", () => {
  let cli: CliEnvironment;
  beforeAll(async () => {
    cli = await createCliEnvironment();
    const file = await cli.file("one.yaml", ONE_STEP_WORKFLOW);
    expect((await cli.run(["workflow", "submit", file, "--tenant", "acme"])).code).toBe(0);
    expect((await cli.run(["task", "start", "one-step", "--tenant", "acme"])).code).toBe(0);
  });
  afterAll(async () => {
    await cli?.cleanup();
  });

  it("signs with the operator's key in the CLI; only its public key is stored", async () => {
    const pem = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const keyFile = await cli.file("operator.pem", pem);
    const signed = await cli.run(["audit", "checkpoint", "--tenant", "acme", "--key-file", keyFile, "--json"]);
    expect(signed.code).toBe(0);
    const outcome = JSON.parse(signed.last);
    expect(outcome).toMatchObject({ tenant: "acme", status: "signed", checkpoint: { orgId: "acme", kid: checkpointKeyId(createPublicKey(pem)) } });
    const again = await cli.run(["audit", "checkpoint", "--tenant", "acme", "--key-file", keyFile]);
    expect(again.last).toBe(`the audit head of tenant acme at seq ${outcome.checkpoint.seq} is already signed (key ${outcome.checkpoint.kid})`);
    const { rows } = await cli.db.pool.query("SELECT private_key FROM checkpoint_keys WHERE kid = $1", [outcome.checkpoint.kid]);
    expect(rows).toEqual([{ private_key: null }]);
    expect((await verifyChainWithCheckpoints(stores, cli.db.pool, "acme")).ok).toBe(true);

    const notAKey = await cli.file("not-a-key.pem", "hello");
    const refused = await cli.run(["audit", "checkpoint", "--tenant", "acme", "--key-file", notAKey]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/^error: CONFIG: the checkpoint signing key does not parse/);
  });
});
