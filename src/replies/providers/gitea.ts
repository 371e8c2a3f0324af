/**
 * Gitea: `POST {api}/repos/{owner}/{repo}/issues/{index}/comments` with `Authorization: token …` (issues and pull
 * requests share the index). Answers 201 `{ id, html_url }`.
 */
import type { ProviderPost, ProviderResult, ReplyProvider } from "./provider.js";
import { idText, joinUrl, missingId, postJson, repositoryPath, stringOrNull } from "./provider.js";

export const giteaProvider: ReplyProvider = {
  kind: "gitea",
  maxTextChars: 65_536,
  async post(request: ProviderPost): Promise<ProviderResult> {
    const { address } = request;
    if (address.kind !== "forge_comment" || address.forge !== "gitea") throw new Error(`gitea cannot answer a ${address.kind} address`);
    const url = joinUrl(request.apiBaseUrl, `/repos/${repositoryPath(address.repository)}/issues/${address.number}/comments`);
    const answer = await postJson(request, "gitea", url, { authorization: `token ${request.secret}` }, { body: request.text });
    if (!answer.ok) return answer.outcome;
    const id = idText(answer.data.id);
    if (id === undefined) return missingId("gitea", "id");
    return { outcome: "sent", providerId: id, permalink: stringOrNull(answer.data.html_url) };
  },
};
