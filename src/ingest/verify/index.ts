/**
 * Verification per source, before anything about a delivery is stored. `generic` is not verified: its URL token is
 * its only credential, so its body is treated as unverified everywhere (it never yields a reply address).
 */
import type { IngestSource } from "../endpoint-store.js";
import { verifyCairn } from "./cairn.js";
import { verifyGitea } from "./gitea.js";
import { verifyGithub } from "./github.js";
import { verifySlack } from "./slack.js";
import type { SignedDelivery, Verification } from "./types.js";

export type { SignedDelivery, Verification } from "./types.js";

export async function verifyDelivery(source: Exclude<IngestSource, "generic">, delivery: SignedDelivery, secrets: readonly string[]): Promise<Verification> {
  switch (source) {
    case "github":
      return verifyGithub(delivery, secrets);
    case "gitea":
      return verifyGitea(delivery, secrets);
    case "slack":
      return verifySlack(delivery, secrets);
    case "cairn":
      return verifyCairn(delivery, secrets);
  }
}
