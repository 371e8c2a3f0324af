/**
 * Secret scanning of reply text before anything is recorded for a dial: a public comment is the worst place for
 * an agent to paste a token. Uses secretlint's maintained recommended rule set. Only the RULE that matched is
 * ever reported (`@secretlint/secretlint-rule-github`, with its message id); the match itself, and secretlint's
 * message (which can quote it), never leave this function.
 */
import { lintSource } from "@secretlint/core";
import { creator as recommendedPreset } from "@secretlint/secretlint-rule-preset-recommend";

/** The first rule the text matches, `ruleId (MESSAGE_ID)`, or null. */
export type SecretScanner = (text: string) => Promise<string | null>;

const CONFIG = { rules: [{ id: "@secretlint/secretlint-rule-preset-recommend", rule: recommendedPreset }] };

export const scanForSecrets: SecretScanner = async (text) => {
  if (text.length === 0) return null;
  const result = await lintSource({
    source: { filePath: "/origin-reply.txt", content: text, contentType: "text" },
    options: { config: CONFIG },
  });
  const hit = result.messages.find((m) => m.severity === "error") ?? result.messages[0];
  return hit ? `${hit.ruleId} (${hit.messageId})` : null;
};
