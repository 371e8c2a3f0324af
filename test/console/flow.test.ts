/**
 * The console in a real browser (issue 13): headless Chromium against a real gateway + coordinator + workers + A2A
 * agent on loopback. A tenant signs in (with the keyboard), starts the demo workflow, watches its steps change live,
 * approves the parked step on the Approvals page, reads the audit rows and verifies the chain; an admin flips a flag
 * and finds its audit row, and replays a dead letter. Any console error, page error or failed request fails it.
 *
 * Screenshots go to docs/console/ with SWITCHYARD_CONSOLE_SCREENSHOTS=1 (`npm run console:screenshots`), else to a
 * scratch folder. Skips, saying why, only when no Chromium binary is installed.
 */
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitForProgress } from "../support/wait.js";
import { findChromium, launchChromium, NO_CHROMIUM, pageText, waitForSelector, watchProblems, type PageProblems } from "./browser.js";
import { buildConsole, DEAD_STREAM, startConsoleStack, TENANT, type ConsoleStack } from "./stack.js";

const chromiumPath = findChromium();
if (!chromiumPath) console.warn(`\n!! ${NO_CHROMIUM}\n`);

const SHOTS = process.env.SWITCHYARD_CONSOLE_SCREENSHOTS === "1" ? fileURLToPath(new URL("../../docs/console/", import.meta.url)) : mkdtempSync(join(tmpdir(), "console-shots-"));

describe.skipIf(!chromiumPath)("the console in Chromium", () => {
  let stack: ConsoleStack;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: PageProblems;
  let taskId = "";

  beforeAll(async () => {
    buildConsole();
    mkdirSync(SHOTS, { recursive: true });
    stack = await startConsoleStack();
    browser = await launchChromium(chromiumPath!);
    context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
    problems = watchProblems(context);
    page = await context.newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const go = async (hash: string, selector: string, what: string) => {
    // Hash navigation, as a link does: no reload, the session and the app stay.
    await page.evaluate(`window.location.hash = ${JSON.stringify(hash)}`);
    await waitForSelector(page, selector, what);
  };
  const noProblems = () => expect(problems.list(), "console errors or failed requests in the page").toEqual([]);

  it("signs a tenant in with the keyboard, keeping the key out of the page", async () => {
    await page.goto(stack.consoleUrl);
    await waitForSelector(page, "#apiKey", "the sign-in form");
    await shot("sign-in");
    problems.allowOnce("/console/session", 401);
    await page.fill("#apiKey", "sy_not-a-key-anyone-made");
    await page.click("button[type=submit]");
    await waitForSelector(page, ".sign-in .problem", "the refusal of an unknown key");
    expect(await page.locator(".sign-in .problem").innerText()).toMatch(/unknown|invalid|API key/i);
    expect(await page.inputValue("#apiKey"), "the refused key is cleared from the form").toBe("");
    await page.reload();
    await waitForSelector(page, "#apiKey", "the sign-in form");
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement && document.activeElement.id")).toBe("apiKey");
    await page.keyboard.type(stack.tenantKey);
    await page.keyboard.press("Enter");
    await waitForSelector(page, "nav[aria-label=Pages]", "the signed-in console");
    expect(await pageText(page)).toContain(`tenant ${TENANT}`);
    const kept = String(await page.evaluate("JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie, html: document.documentElement.outerHTML })"));
    expect(kept).not.toContain(stack.tenantKey);
    // HttpOnly: the page's script cannot read the session cookie.
    expect(kept).not.toContain("switchyard_session");
    noProblems();
  });

  it("starts the demo workflow and shows its steps changing live until the approval parks it", async () => {
    await waitForSelector(page, "summary", "the start form");
    await page.click("summary");
    await page.selectOption("select[name=workflow]", "research-report");
    // Input that is not JSON is refused in the page, and starts nothing.
    await page.fill("#task-input", "{topic: unquoted");
    await page.click("form:has(#task-input) button[type=submit]");
    await waitForSelector(page, "form:has(#task-input) .problem", "the refusal of input that is not JSON");
    expect(await page.locator("form:has(#task-input) .problem").innerText()).toContain("not JSON");
    expect((await stack.stack.runtime.pool.query("SELECT count(*)::int AS n FROM tasks")).rows[0].n).toBe(0);
    await page.fill("#task-input", JSON.stringify({ topic: "browser-tested consoles" }));
    await page.click("form:has(#task-input) button[type=submit]");
    await waitForSelector(page, ".dag .dag-node", "the task page with its DAG");
    taskId = decodeURIComponent(/#\/tasks\/([^/?]+)/.exec(page.url())?.[1] ?? "");
    expect(taskId).toMatch(/^[0-9a-f-]{36}$/);

    // The DAG as the page shows it over time, without a reload: the Watch stream moves it.
    const seen = new Set<string>();
    const dag = () => page.$$eval(".dag-node", (nodes) => nodes.map((n) => `${n.getAttribute("data-step")}=${[...n.classList].find((c) => c.startsWith("status-"))}`).join(" "));
    await waitForProgress({
      what: "the publish step to show parked on the task page",
      progress: async () => {
        const now = await dag();
        seen.add(now);
        return now;
      },
      done: (now) => now.includes("publish=status-parked"),
      describeStuck: (now) => `DAG: ${now}`,
      intervalMs: 50,
    });
    expect(seen.size, `DAG states seen: ${[...seen].join(" | ")}`).toBeGreaterThan(1);
    const last = await dag();
    for (const step of ["research", "fact-check", "draft"]) expect(last).toContain(`${step}=status-completed`);
    // Status by text and shape, not colour alone.
    expect(await page.locator(".dag-node[data-step=publish] text").first().textContent()).toContain("‖");
    expect(await page.locator("[data-step=publish] .status").first().textContent()).toContain("parked");
    await shot("task-parked");
    noProblems();
  });

  it("approves the parked step on the Approvals page and the task completes", async () => {
    await go("#/approvals", ".card[data-approval]", "the pending approval");
    const card = page.locator(".card[data-approval]").first();
    expect(await card.textContent()).toContain("publish");
    await shot("approvals");
    await card.locator("input[name=reason]").fill("looks right");
    await card.locator("button.approve").click();
    await waitForSelector(page, "tr[data-approval] .status-approved", "the approval among the decided ones");
    const row = await page.locator("tr[data-approval]").first().innerText();
    expect(row).toContain("console");
    expect(row).toContain("looks right");

    await go(`#/tasks/${taskId}`, "h1 .status-completed", "the task to show completed");
    const audit = await page.locator("table.audit tbody").innerText();
    for (const action of ["dispatch", "a2a_egress", "requires_approval"]) expect(audit).toContain(action);
    expect(await page.locator("table.audit tbody tr").count()).toBeGreaterThanOrEqual(6);
    expect(await page.locator("[data-testid=task-cost]").innerText()).toMatch(/\/ 100$/);
    // Attempts and bridges: the approval's decider on publish's attempt, the agent's completed bridge on fact-check.
    expect(await page.locator("[data-step=publish] .timeline").innerText()).toMatch(/approved by console/);
    expect(await page.locator("[data-step=fact-check] .bridges").innerText()).toMatch(/attempt 1: completed/);
    await shot("task-completed");
    noProblems();
  });

  it("verifies the tenant's audit chain", async () => {
    await go("#/audit", "button[type=submit]", "the audit page");
    await page.click("button[type=submit]");
    await waitForSelector(page, "[data-testid=verify-result]", "the verification result");
    expect(await page.locator("[data-testid=verify-result]").innerText()).toMatch(new RegExp(`The chain of ${TENANT} verifies: \\d+ rows`));
    await shot("audit");
    noProblems();
  });

  it("shows the workflow's DAG and a bad new version's problems at their lines", async () => {
    await go("#/workflows/research-report@1", ".workflow .dag-node", "the workflow's DAG");
    expect(await page.locator("pre.yaml").innerText()).toContain("foreign:fact-checker");
    problems.allowOnce("/switchyard.api.v1.WorkflowService/Submit", 400);
    await page.fill("#workflow-source", ["name: broken", "steps:", "  - id: a", "    to: role:writer", "    needs: [ghost]", ""].join("\n"));
    await page.click(".submit-workflow button[type=submit]");
    await waitForSelector(page, ".violations li", "the validation problems");
    const problem = await page.locator(".violations").innerText();
    expect(problem).toMatch(/line 5/);
    expect(problem).toContain("ghost");
    await shot("workflows");
    noProblems();
  });

  it("lists the foreign agent", async () => {
    await go("#/agents", ".card[data-agent=fact-checker]", "the fact-checker's card");
    await waitForSelector(page, ".card[data-agent=fact-checker] tr[data-bridge]", "the fact-checker's bridges");
    const card = await page.locator(".card[data-agent=fact-checker]").innerText();
    expect(card).toContain("fact-check");
    expect(card).toMatch(/Breaker: .*(closed|unknown)/);
    expect(card).toContain("completed");
    await shot("agents");
    noProblems();
  });

  it("fits a phone's width", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await go(`#/tasks/${taskId}`, "h1 .status-completed", "the task page on a phone");
    await go("#/tasks", `tr[data-task="${taskId}"]`, "the tasks list on a phone");
    const overflow = Number(await page.evaluate("document.documentElement.scrollWidth - window.innerWidth"));
    expect(overflow, "the page scrolls sideways on a phone").toBeLessThanOrEqual(0);
    await shot("tasks-phone");
    await page.setViewportSize({ width: 1366, height: 900 });
    await go("#/tasks", `tr[data-task="${taskId}"] .status-completed`, "the tasks list");
    await shot("tasks");
    noProblems();
  });

  it("lists a task started elsewhere and cancels it from its page", async () => {
    await go("#/tasks", `tr[data-task="${taskId}"]`, "the tasks list");
    const other = await stack.stack.runtime.tasks.start({ orgId: TENANT, workflow: "research-report", input: { topic: "started through the API" } });
    // The first page refreshes by itself; the row's status then follows the task's Watch stream.
    await waitForSelector(page, `tr[data-task="${other.taskId}"] .status-parked`, "the new task to show parked in the list");
    await page.click(`tr[data-task="${other.taskId}"] a`);
    await waitForSelector(page, "form:has(button.danger) input[name=reason]", "the task page's cancel form");
    await page.fill("form:has(button.danger) input[name=reason]", "not needed after all");
    await page.click("text=Cancel task");
    await waitForSelector(page, "h1 .status-cancelled", "the task to show cancelled");
    expect(await page.locator("[data-step=publish] .status").first().innerText()).toContain("cancelled");
    const view = await stack.stack.runtime.tasks.get(TENANT, other.taskId);
    expect(view.status).toBe("cancelled");
    noProblems();
  });

  it("filters the list by age through the API: a task from two days ago is not among the last day's", async () => {
    const recent = await stack.stack.runtime.tasks.start({ orgId: TENANT, workflow: "research-report", input: { topic: "recent" } });
    await stack.stack.runtime.pool.query("UPDATE tasks SET created_at = now() - interval '2 days' WHERE org_id = $1 AND id = $2", [TENANT, taskId]);
    await go("#/tasks", `tr[data-task="${taskId}"]`, "the tasks list, the old task in it");
    await page.getByLabel("Started").selectOption({ label: "last day" });
    await waitForSelector(page, `tr[data-task="${taskId}"]`, "the two-day-old task to leave the list", { absent: true });
    await waitForSelector(page, `tr[data-task="${recent.taskId}"]`, "the recent task to stay listed");
    await page.getByLabel("Started").selectOption({ label: "any time" });
    await waitForSelector(page, `tr[data-task="${taskId}"]`, "the old task back with any time");
    noProblems();
  });

  it("as an admin, flips a flag with a reason and finds its audit row, and replays a dead letter", async () => {
    await page.click("text=Sign out");
    await waitForSelector(page, "#apiKey", "the sign-in form after signing out");
    await page.fill("#apiKey", stack.adminKey);
    await page.click("button[type=submit]");
    await waitForSelector(page, ".tenant-picker option[value=demo]", "the admin's tenant picker", { attached: true });
    await page.selectOption(".tenant-picker select", TENANT);

    await go("#/operations", 'tr[data-flag="A2A_EGRESS_ENABLED/tenant:demo"]', "the tenant's egress flag");
    const flag = page.locator('tr[data-flag="A2A_EGRESS_ENABLED/tenant:demo"]');
    expect(await flag.innerText()).toContain("on");
    await flag.locator("input[name=reason]").fill("console test: egress off after the run");
    await flag.locator("button").click();
    await waitForSelector(page, 'tr[data-flag="A2A_EGRESS_ENABLED/tenant:demo"] .flag-off', "the flag to show off");
    expect(await flag.innerText()).toContain("console test: egress off after the run");
    // The change, newest first in the history, names the audit row that records it.
    const change = page.locator("table.flag-history tbody tr").first();
    expect(await change.innerText()).toContain("console test: egress off after the run");
    const recorded = await change.getAttribute("data-change");
    expect(recorded).toMatch(new RegExp(`^${TENANT}#\\d+$`));

    const letter = page.locator("tr[data-dead-letter]").first();
    expect(await letter.innerText()).toContain(DEAD_STREAM);
    await shot("operations");
    expect((await stack.deadLetterCounts()).dead).toBe(1);
    await letter.locator("button").click();
    await waitForSelector(page, "p[role=status]:has-text('Replayed 1 entry')", "the replay's outcome");
    const counts = await stack.deadLetterCounts();
    expect(counts.dead).toBe(0);
    expect(counts.live).toBeGreaterThan(0);

    await go("#/audit", "table.audit tbody tr", "the tenant's audit rows");
    const rows = await page.locator("table.audit tbody tr").allInnerTexts();
    // The demo's switch-on is the tenant chain's first row; the console's switch-off is the last.
    const flagRows = rows.filter((r) => r.includes("A2A_EGRESS_ENABLED"));
    expect(flagRows.map((r) => /flag\s+(on|off)/.exec(r)?.[1]), rows.slice(-5).join("\n")).toEqual(["on", "off"]);
    expect(flagRows[1]).toContain("console-sre");
    expect(flagRows[1]!.split("\t")[0]).toBe(recorded!.split("#")[1]);
    noProblems();
  });
});
