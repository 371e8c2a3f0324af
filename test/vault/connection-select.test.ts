/**
 * Credential selection for a reply address: the TASK's tenant only (confirmation 3), kind and account key matched
 * exactly, the targets allowlist per kind. Pure matching first, then against the database.
 */
import { createPostgresStores } from "../../src/store/postgres-stores.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReplyAddress } from "../../src/core/reply-address.js";
import { withTransaction } from "../../src/store/db.js";
import { createTenant } from "../../src/tenancy/tenants.js";
import { selectConnection, targetAllowed } from "../../src/vault/connection-select.js";
import { addConnection } from "../../src/vault/connection-store.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { cipherOf, keyItem, uniqueSecret } from "./helpers.js";

const stores = createPostgresStores();

const forge = (repository: string, host = "github.com", forgeKind: "github" | "gitea" = "github"): ReplyAddress => ({ kind: "forge_comment", forge: forgeKind, host, repository, number: 7 });
const slack = (channel: string, teamId = "T0ACME"): ReplyAddress => ({ kind: "slack_thread", teamId, channel, threadTs: "1700000000.000100" });
const cairn = (artifactId: string, baseUrl = "https://cairn.example"): ReplyAddress => ({ kind: "cairn_comment", baseUrl, artifactId });

describe("targetAllowed", () => {
  it("admits everything when the allowlist is empty", () => {
    expect(targetAllowed([], forge("anyone/anything"))).toBe(true);
    expect(targetAllowed([], slack("C99"))).toBe(true);
    expect(targetAllowed([], cairn("x"))).toBe(true);
  });

  it("matches repository globs within one path segment, case-insensitively; * alone admits every repository", () => {
    expect(targetAllowed(["acme/*"], forge("acme/app"))).toBe(true);
    expect(targetAllowed(["acme/*"], forge("Acme/App"))).toBe(true);
    expect(targetAllowed(["acme/*"], forge("acme2/app"))).toBe(false);
    expect(targetAllowed(["acme/*"], forge("evil/acme"))).toBe(false);
    expect(targetAllowed(["acme/app"], forge("acme/app"))).toBe(true);
    expect(targetAllowed(["acme/app"], forge("acme/app2"))).toBe(false);
    expect(targetAllowed(["acme/app-*"], forge("acme/app-web"))).toBe(true);
    expect(targetAllowed(["acme/app-*"], forge("acme/app"))).toBe(false);
    // A dot is a literal dot, not "any character".
    expect(targetAllowed(["acme/a.b"], forge("acme/axb"))).toBe(false);
    expect(targetAllowed(["*/docs"], forge("acme/docs"))).toBe(true);
    expect(targetAllowed(["*"], forge("whoever/whatever"))).toBe(true);
    expect(targetAllowed(["other/x", "acme/*"], forge("acme/y"))).toBe(true);
  });

  it("matches Slack channel ids exactly and Cairn artifact globs case-sensitively", () => {
    expect(targetAllowed(["C01", "C02"], slack("C02"))).toBe(true);
    expect(targetAllowed(["C01"], slack("C011"))).toBe(false);
    expect(targetAllowed(["art-*"], cairn("art-42"))).toBe(true);
    expect(targetAllowed(["art-*"], cairn("ART-42"))).toBe(false);
    expect(targetAllowed(["art-1"], cairn("art-12"))).toBe(false);
  });
});

describe("selectConnection", () => {
  let db: TestDatabase;
  const cipher = cipherOf(keyItem("k1"));
  const ids: Record<string, string> = {};
  const add = async (orgId: string, name: string, kind: string, accountKey: string, targets: string[] = []) => {
    const c = await withTransaction(db.pool, (client) => addConnection(stores, client, cipher, orgId, { kind, accountKey, targets, secret: uniqueSecret() }, { actor: "test" }));
    ids[name] = c.id;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    for (const orgId of ["acme", "globex", "initech"]) await createTenant(stores.tenants, db.pool, { orgId, name: orgId });
    await add("acme", "acme-github", "github", "github.com", ["acme/*"]);
    await add("acme", "acme-gitea", "gitea", "git.example:3000");
    await add("acme", "acme-slack", "slack", "T0ACME", ["C01"]);
    await add("acme", "acme-cairn", "cairn", "https://cairn.example");
    await add("globex", "globex-ghe", "github", "ghe.globex.example");
  });
  afterAll(async () => {
    await db.drop();
  });

  it("selects the tenant's connection whose kind and account key match exactly", async () => {
    expect(await selectConnection(stores.connections, db.pool, "acme", forge("acme/app"))).toMatchObject({ ok: true, connection: { id: ids["acme-github"], orgId: "acme" } });
    expect(await selectConnection(stores.connections, db.pool, "acme", forge("any/repo", "git.example:3000", "gitea"))).toMatchObject({ ok: true, connection: { id: ids["acme-gitea"] } });
    expect(await selectConnection(stores.connections, db.pool, "acme", slack("C01"))).toMatchObject({ ok: true, connection: { id: ids["acme-slack"] } });
    expect(await selectConnection(stores.connections, db.pool, "acme", cairn("art-1"))).toMatchObject({ ok: true, connection: { id: ids["acme-cairn"] } });
    // Same host, other kind: a gitea address never picks a github connection, nor the reverse.
    expect(await selectConnection(stores.connections, db.pool, "acme", forge("acme/app", "github.com", "gitea"))).toMatchObject({ ok: false, code: "no_connection" });
    expect(await selectConnection(stores.connections, db.pool, "acme", forge("acme/app", "git.example:3000", "github"))).toMatchObject({ ok: false, code: "no_connection" });
    // Exact account key: another port, a subdomain, another team, another Cairn instance are other accounts.
    expect(await selectConnection(stores.connections, db.pool, "acme", forge("acme/app", "git.example", "gitea"))).toMatchObject({ ok: false, code: "no_connection" });
    expect(await selectConnection(stores.connections, db.pool, "acme", forge("acme/app", "api.github.com"))).toMatchObject({ ok: false, code: "no_connection" });
    expect(await selectConnection(stores.connections, db.pool, "acme", slack("C01", "T0OTHER"))).toMatchObject({ ok: false, code: "no_connection" });
    expect(await selectConnection(stores.connections, db.pool, "acme", cairn("art-1", "https://cairn.example:8443"))).toMatchObject({ ok: false, code: "no_connection" });
  });

  it("refuses an address its targets allowlist does not admit", async () => {
    const refused = await selectConnection(stores.connections, db.pool, "acme", forge("other/app"));
    expect(refused).toMatchObject({ ok: false, code: "target_not_allowed" });
    expect((refused as { message: string }).message).toContain("other/app");
    expect(await selectConnection(stores.connections, db.pool, "acme", slack("C02"))).toMatchObject({ ok: false, code: "target_not_allowed" });
  });

  it("never selects another tenant's connection (confirmation 3)", async () => {
    // Globex has no github.com connection; Acme's must not be used for Globex's task.
    const globex = await selectConnection(stores.connections, db.pool, "globex", forge("acme/app"));
    expect(globex).toMatchObject({ ok: false, code: "no_connection" });
    expect((globex as { message: string }).message).toMatch(/^tenant globex has no github connection for github\.com/);
    expect(await selectConnection(stores.connections, db.pool, "initech", slack("C01"))).toMatchObject({ ok: false, code: "no_connection" });
    // And the other way round: Globex's GHE connection serves Globex only.
    expect(await selectConnection(stores.connections, db.pool, "globex", forge("globex/x", "ghe.globex.example"))).toMatchObject({ ok: true, connection: { id: ids["globex-ghe"], orgId: "globex" } });
    expect(await selectConnection(stores.connections, db.pool, "acme", forge("globex/x", "ghe.globex.example"))).toMatchObject({ ok: false, code: "no_connection" });
  });
});
