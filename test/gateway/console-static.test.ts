/**
 * The console's static files through a real gateway: content types, cache headers, the strict CSP on every
 * answer, SPA fallback, traversal refused, and a clear page when the console is not built.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { CONSOLE_CSP } from "../../src/gateway/console/console-headers.js";
import { defaultConsoleDirs } from "../../src/gateway/console/static-route.js";
import { startGateway, type Gateway } from "../../src/gateway/server.js";
import { createGatewayFixture, type GatewayFixture } from "./fixture.js";
import { rawGet } from "./console-fixture.js";

const INDEX = '<!doctype html><html><head><script type="module" src="/console/assets/app-3f9a.js"></script></head><body></body></html>';
const CSP_EXPECTED =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

function expectConsoleHeaders(headers: Headers): void {
  expect(headers.get("content-security-policy")).toBe(CSP_EXPECTED);
  expect(headers.get("x-content-type-options")).toBe("nosniff");
  expect(headers.get("referrer-policy")).toBe("no-referrer");
}

describe("console static files", () => {
  let fx: GatewayFixture;
  let dir: string;
  let unbuilt: Gateway;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "console-"));
    mkdirSync(path.join(dir, "assets"));
    writeFileSync(path.join(dir, "index.html"), INDEX);
    writeFileSync(path.join(dir, "assets", "app-3f9a.js"), "console.log('hi');\n");
    writeFileSync(path.join(dir, "assets", "app-3f9a.css"), "body{margin:0}\n");
    writeFileSync(path.join(dir, "favicon.svg"), "<svg xmlns='http://www.w3.org/2000/svg'/>");
    fx = await createGatewayFixture({ console: { dirs: [path.join(dir, "missing"), dir] } });
    unbuilt = await startGateway(fx.rt, { port: 0, host: "127.0.0.1", collectMetrics: false, console: { dirs: [path.join(dir, "missing")] } });
  });
  afterAll(async () => {
    await unbuilt?.close();
    await fx?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it("uses the documented CSP", () => {
    expect(CONSOLE_CSP).toBe(CSP_EXPECTED);
  });

  it("looks for the build in dist/console/ of the package by default", () => {
    const root = fileURLToPath(new URL("../../", import.meta.url));
    expect(defaultConsoleDirs()).toEqual([path.join(root, "dist", "console")]);
  });

  it("redirects /console to /console/ and serves index.html there, not cached", async () => {
    const redirect = await fetch(`${fx.url}/console`, { redirect: "manual" });
    expect(redirect.status).toBe(308);
    expect(redirect.headers.get("location")).toBe("/console/");
    const res = await fetch(`${fx.url}/console/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expectConsoleHeaders(res.headers);
    expect(await res.text()).toBe(INDEX);
  });

  it("serves hashed assets with their type, immutable, with the CSP", async () => {
    const js = await fetch(`${fx.url}/console/assets/app-3f9a.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(js.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expectConsoleHeaders(js.headers);
    expect(await js.text()).toContain("console.log");
    const css = await fetch(`${fx.url}/console/assets/app-3f9a.css`);
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
    const svg = await fetch(`${fx.url}/console/favicon.svg`);
    expect(svg.headers.get("content-type")).toBe("image/svg+xml");
    expect(svg.headers.get("cache-control")).toBe("no-cache");
  });

  it("answers index.html for app routes, 404 for a missing asset", async () => {
    for (const route of ["/console/tasks", "/console/tasks/9222-abc", "/console/operations/flags?scope=global", "/console/agents/fact.checker"]) {
      const res = await fetch(`${fx.url}${route}`);
      expect(res.status, route).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expectConsoleHeaders(res.headers);
      expect(await res.text()).toBe(INDEX);
    }
    const missing = await fetch(`${fx.url}/console/assets/gone-1234.js`);
    expect(missing.status).toBe(404);
    expectConsoleHeaders(missing.headers);
  });

  it("refuses paths that try to leave the console directory", async () => {
    for (const attempt of ["/console/../package.json", "/console/assets/../../package.json", "/console/%2e%2e/package.json", "/console/..%2fpackage.json", "/console/a%5c..%5cpackage.json", "/console/%00"]) {
      const res = await rawGet(fx.url, attempt);
      expect(res.status, attempt).toBe(400);
      expect(res.body).not.toContain("switchyard");
      expect(res.headers["content-security-policy"]).toBe(CSP_EXPECTED);
    }
  });

  it("refuses methods other than GET and HEAD on files", async () => {
    const res = await fetch(`${fx.url}/console/index.html`, { method: "POST" });
    expect(res.status).toBe(405);
    const head = await fetch(`${fx.url}/console/assets/app-3f9a.js`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(String("console.log('hi');\n".length));
  });

  it("says how to build the console when it is not built", async () => {
    const res = await fetch(`${unbuilt.url}/console/`);
    expect(res.status).toBe(404);
    expect(await res.text()).toBe("console not built: run npm run build\n");
    expectConsoleHeaders(res.headers);
  });
});
