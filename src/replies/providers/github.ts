/**
 * GitHub (and GitHub Enterprise): an issue or pull-request comment through `@octokit/core`, whose requests go
 * through the guarded fetch we inject. Octokit core has no retry or throttling of its own (those are plugins we do
 * not load), so a request is written at most once per dial; the sender decides about any other.
 */
import { Octokit } from "@octokit/core";
import { classifyAnswer, classifyThrown, providerErrorText } from "../dial-outcome.js";
import type { ProviderPost, ProviderResult, ReplyProvider } from "./provider.js";
import { idText, missingId, stringOrNull } from "./provider.js";

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

export const githubProvider: ReplyProvider = {
  kind: "github",
  maxTextChars: 65_536,
  async post(request: ProviderPost): Promise<ProviderResult> {
    const { address } = request;
    if (address.kind !== "forge_comment" || address.forge !== "github") throw new Error(`github cannot answer a ${address.kind} address`);
    const [owner, repo] = address.repository.split("/") as [string, string];
    const octokit = new Octokit({
      auth: request.secret,
      baseUrl: request.apiBaseUrl.replace(/\/+$/, ""),
      userAgent: "switchyard-replies",
      // Octokit's own logger would print deprecation notices to the console; we report through our outcome.
      log: quiet,
      request: { fetch: request.fetch, ...(request.signal ? { signal: request.signal } : {}) },
    });
    let data: Record<string, unknown>;
    try {
      // Octokit expands {owner}, {repo} and {issue_number} with URI-template encoding (reserved characters escaped).
      const response = await octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", {
        owner,
        repo,
        issue_number: address.number,
        body: request.text,
        headers: { "x-github-api-version": "2022-11-28" },
      });
      data = response.data as unknown as Record<string, unknown>;
    } catch (error) {
      const status = (error as { status?: unknown }).status;
      const response = (error as { response?: { headers?: Record<string, string | number | undefined>; data?: unknown } }).response;
      // Octokit reports a fetch that threw as status 500 without a response: that is our egress error, wrapped.
      if (typeof status !== "number" || response === undefined) return classifyThrown(error);
      const headers = response.headers ?? {};
      const body = typeof response.data === "string" ? response.data : JSON.stringify(response.data ?? "");
      return classifyAnswer(
        { status, headers: { get: (name) => (headers[name.toLowerCase()] === undefined ? null : String(headers[name.toLowerCase()])) }, errorText: providerErrorText(body) },
        { provider: "github", now: request.now(), maxRetryAfterMs: request.maxRetryAfterMs },
      );
    }
    if (typeof data !== "object" || data === null) return { outcome: "unknown", code: "invalid_response", message: "github answered success with a body that is not a JSON object" };
    const id = idText(data.id);
    if (id === undefined) return missingId("github", "id");
    return { outcome: "sent", providerId: id, permalink: stringOrNull(data.html_url) };
  },
};
