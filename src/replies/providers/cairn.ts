/**
 * Cairn: `POST {base}/v1/artifacts/{id}/comments` with `{ body }` and a Bearer token scoped to annotation writes.
 * Answers `{ id, url }`.
 */
import type { ProviderPost, ProviderResult, ReplyProvider } from "./provider.js";
import { enc, idText, joinUrl, missingId, postJson, stringOrNull } from "./provider.js";

export const cairnProvider: ReplyProvider = {
  kind: "cairn",
  maxTextChars: 16_384,
  async post(request: ProviderPost): Promise<ProviderResult> {
    const { address } = request;
    if (address.kind !== "cairn_comment") throw new Error(`cairn cannot answer a ${address.kind} address`);
    const url = joinUrl(request.apiBaseUrl, `/v1/artifacts/${enc(address.artifactId)}/comments`);
    const answer = await postJson(request, "cairn", url, { authorization: `Bearer ${request.secret}` }, { body: request.text });
    if (!answer.ok) return answer.outcome;
    const id = idText(answer.data.id);
    if (id === undefined) return missingId("cairn", "id");
    return { outcome: "sent", providerId: id, permalink: stringOrNull(answer.data.url) };
  },
};
