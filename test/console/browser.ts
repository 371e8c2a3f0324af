/**
 * Headless Chromium for the browser suite (the Debian `chromium` package, driven by playwright-core), and what
 * the suite watches in every page: errors on the page's console, uncaught exceptions and failed requests all
 * fail the test.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { waitForProgress } from "../support/wait.js";

const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome", "/usr/bin/google-chrome-stable"];

/** The Chromium binary, or undefined (the suite then skips, saying so). */
export function findChromium(): string | undefined {
  return CANDIDATES.find((path) => existsSync(path));
}

export const NO_CHROMIUM = `no Chromium binary (looked for ${CANDIDATES.join(", ")}): the browser suite is SKIPPED — apt-get install -y chromium`;

export interface PageProblems {
  /** Everything that went wrong in any page so far, one line each. */
  list(): string[];
  /** Expects the next answer to `path` to have this status (a validation error the test provokes). */
  allowOnce(path: string, status: number): void;
}

/**
 * Records console errors, page errors, failed requests and 4xx/5xx answers. The one answer expected to fail is
 * the app's first question "am I signed in?" (GET /console/session → 401) — and the console error Chromium logs
 * for it — and those a test announces with `allowOnce`. A request the page itself cancelled (a Watch stream closed on leaving a page) is not a failure.
 */
export function watchProblems(context: BrowserContext): PageProblems {
  const list: string[] = [];
  // Chromium logs "Failed to load resource" for an expected 4xx too, before or after the response event: those
  // are filtered when the list is read.
  const loadErrors: { url: string; line: string }[] = [];
  const allowed: { path: string; status: number }[] = [];
  const expected = (method: string, url: string, status: number) => {
    const path = new URL(url).pathname;
    if (method === "GET" && path === "/console/session" && status === 401) return true;
    const i = allowed.findIndex((a) => a.path === path && a.status === status);
    if (i >= 0) allowed.splice(i, 1);
    return i >= 0;
  };
  const expectedUrls = new Set<string>();
  const attach = (page: Page) => {
    page.on("pageerror", (error) => list.push(`page error: ${error.message}`));
    page.on("console", (message) => {
      if (message.type() !== "error") return;
      const at = message.location().url;
      if (at && /Failed to load resource/.test(message.text())) {
        loadErrors.push({ url: at, line: `console error: ${message.text()} (${at})` });
        return;
      }
      list.push(`console error: ${message.text()}${at ? ` (${at})` : ""}`);
    });
    page.on("requestfailed", (request) => {
      const failure = request.failure()?.errorText ?? "failed";
      if (failure === "net::ERR_ABORTED") return;
      list.push(`request failed: ${request.method()} ${request.url()}: ${failure}`);
    });
    page.on("response", (response) => {
      const request = response.request();
      if (response.status() < 400) return;
      if (expected(request.method(), response.url(), response.status())) {
        expectedUrls.add(response.url());
        return;
      }
      list.push(`HTTP ${response.status()}: ${request.method()} ${response.url()}`);
    });
  };
  context.on("page", attach);
  for (const page of context.pages()) attach(page);
  return {
    list: () => [...list, ...loadErrors.filter((e) => !expectedUrls.has(e.url)).map((e) => e.line)],
    allowOnce: (path, status) => allowed.push({ path, status }),
  };
}

export async function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({ executablePath, headless: true, args: ["--disable-dev-shm-usage"] });
}

/**
 * Waits until `selector` is visible in the page (or, with `attached`, in it at all: an <option>), failing only once the page's main text stopped changing for
 * `stallMs` (and then saying what the page showed): a slow page that keeps moving is waited for.
 */
/** Waits until `selector` shows (or, with `absent`, until nothing matches it), failing once the page stops changing. */
export async function waitForSelector(page: Page, selector: string, what: string, options: { stallMs?: number; attached?: boolean; absent?: boolean } = {}): Promise<void> {
  const present = async () =>
    options.attached || options.absent ? (await page.locator(selector).count()) > 0 : await page.locator(selector).first().isVisible().catch(() => false);
  await waitForProgress({
    what,
    progress: async () => ({ visible: await present(), text: await pageText(page) }),
    done: (state) => (options.absent ? !state.visible : state.visible),
    key: (state) => state.text,
    stallMs: options.stallMs ?? 20_000,
    intervalMs: 100,
    describeStuck: (state) => `the page (${page.url()}) shows:\n${state.text.slice(0, 2000)}`,
  });
}

export async function pageText(page: Page): Promise<string> {
  return page
    .locator("body")
    .innerText({ timeout: 2000 })
    .catch(() => "");
}
