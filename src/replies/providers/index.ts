/** The reply provider adapters by connection kind. */
import type { ConnectionKind } from "../../core/reply-address.js";
import { cairnProvider } from "./cairn.js";
import { giteaProvider } from "./gitea.js";
import { githubProvider } from "./github.js";
import type { ReplyProvider } from "./provider.js";
import { slackProvider } from "./slack.js";

export const REPLY_PROVIDERS: Readonly<Record<ConnectionKind, ReplyProvider>> = {
  github: githubProvider,
  gitea: giteaProvider,
  slack: slackProvider,
  cairn: cairnProvider,
};

export type { ReplyProvider, ProviderPost, ProviderResult, LearntIdentity } from "./provider.js";
