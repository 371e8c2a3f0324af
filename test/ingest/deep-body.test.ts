/**
 * An ingest body whose task input would nest past MAX_JSON_DEPTH (the body sits one level down in it) is refused
 * (400) before anything is stored (issue 26 §4).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEndpoints, createIngestBed, githubHeaders, type IngestBed } from "./support.js";

describe("ingest bodies nested too deep", () => {
  let bed: IngestBed;
  let eps: Record<string, { id: string; secret: string }>;
  const stored = () => bed.count("SELECT (SELECT count(*) FROM tasks) + (SELECT count(*) FROM ingest_deliveries) AS n");

  beforeAll(async () => {
    bed = await createIngestBed();
    eps = await createEndpoints(bed, ["github", "generic"] as const);
  });
  afterAll(async () => {
    await bed?.cleanup();
  });

  for (const depth of [3_000, 100_000]) {
    it(`generic: ${depth} levels → 400, nothing stored`, async () => {
      const before = await stored();
      const answer = await bed.post(eps.generic!.id, `${"[".repeat(depth)}${"]".repeat(depth)}`);
      expect(answer).toEqual({ status: 400, body: { error: "the body nests deeper than 63 levels" } });
      expect(await stored()).toBe(before);
    });
  }

  it("a signed GitHub delivery nested 3,000 levels → 400, nothing stored", async () => {
    const before = await stored();
    const body = JSON.stringify({ action: "created", issue: { number: 1 }, comment: { id: 1, body: "x" }, extra: JSON.parse(`${"[".repeat(3_000)}${"]".repeat(3_000)}`) });
    const answer = await bed.post(eps.github!.id, body, await githubHeaders(eps.github!.secret, body, "issue_comment", "d-deep"));
    expect(answer.status).toBe(400);
    expect(await stored()).toBe(before);
  });

  it("63 levels are still taken (the task input holds the body one level down: 64), 64 are not", async () => {
    expect((await bed.post(eps.generic!.id, `${"[".repeat(63)}${"]".repeat(63)}`)).status).toBe(202);
    expect((await bed.post(eps.generic!.id, `${"[".repeat(64)}${"]".repeat(64)}`)).status).toBe(400);
  });
});
