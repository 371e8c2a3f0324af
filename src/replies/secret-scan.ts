/**
 * Secret scanning of reply text before anything is recorded for a dial: a public comment is the worst place for
 * an agent to paste a token. Uses secretlint's maintained recommended rule set, over the text AND over its variants
 * (secret-variants.ts: normalised, rendered, reversed, lines joined, base64/percent/hex decoded), so a token a worker
 * was told to disguise is still refused (issue 26 §5). Only the RULE that matched is ever reported
 * (`@secretlint/secretlint-rule-github`, with its message id); the match itself, and secretlint's message (which can
 * quote it), never leave this module.
 */
import type { lintSource } from "@secretlint/core";
import type { SecretLintCoreConfig } from "@secretlint/types";
import { loadOptionalPackage } from "../process/optional-package.js";
import { secretVariants } from "./secret-variants.js";

/** The first rule the text matches, `ruleId (MESSAGE_ID)`, or null. */
export type SecretScanner = (text: string) => Promise<string | null>;

/**
 * secretlint, loaded on the first scan and kept: its packages are optional dependencies (a worker's install leaves
 * them out, README "Installing for a worker"), and only the process that records replies (the coordinator) scans.
 */
interface Secretlint {
  lintSource: typeof lintSource;
  config: SecretLintCoreConfig;
}

let secretlint: Secretlint | undefined;
let loading: Promise<Secretlint> | undefined;

function loadSecretlint(): Promise<Secretlint> {
  return (loading ??= (async () => {
    const [core, profiler, preset] = await Promise.all([
      optional("@secretlint/core", () => import("@secretlint/core")),
      optional("@secretlint/profiler", () => import("@secretlint/profiler")),
      optional("@secretlint/secretlint-rule-preset-recommend", () => import("@secretlint/secretlint-rule-preset-recommend")),
    ]);
    // secretlint 11 marks ~60 entries in the process-wide performance timeline per lint and its observer rescans
    // every mark so far: each scan gets slower and memory grows for the life of the process (2.4 ms after 200 scans,
    // 97 ms after 4,000; upstream #1633, fixed in 13.x, which needs Node 22). We never read its profile.
    profiler.secretLintProfiler.mark = () => {};
    // The recommended preset's rules, bar one: the preset honours `secretlint-disable` comments found in the
    // content, which in a reply is the worker switching the scan off (and, in the joined content below, a disable
    // in one variant would hide the rest). Listed one by one because @secretlint/core ignores `disabled` on a
    // preset's own rules.
    const config: SecretLintCoreConfig = {
      rules: preset.rules
        .filter((rule) => rule.meta.id !== "@secretlint/secretlint-rule-filter-comments")
        .map((rule) => ({ id: rule.meta.id, rule })),
    };
    return (secretlint = { lintSource: core.lintSource, config });
  })());
}

function optional<T>(name: string, load: () => Promise<T>): Promise<T> {
  return loadOptionalPackage(name, load, { needs: "secret scanning of replies needs" });
}

/**
 * Between the text and its variants: a line no rule's pattern crosses. Every rule that applies to reply text is a
 * regex over the content; those that may span lines do so through `\s` (a PEM body, `KEY = value`), which the NUL
 * stops; the others stop at the newlines. So one lint of the joined content reports what linting each part alone
 * would (test/replies/secret-variants.test.ts checks it), at one lintSource's fixed cost instead of one per variant.
 */
export const SEPARATOR = "\n\u0000\n";

export const scanForSecrets: SecretScanner = async (text) => {
  if (text.length === 0) return null;
  return firstSecretRule([text, ...secretVariants(text)].join(SEPARATOR));
};

/** The first rule `content` matches as it stands, no variants: one lintSource. */
export async function firstSecretRule(content: string): Promise<string | null> {
  const { lintSource, config } = secretlint ?? (await loadSecretlint());
  const result = await lintSource({
    source: { filePath: "/origin-reply.txt", content, contentType: "text" },
    options: { config },
  });
  const hit = result.messages.find((m) => m.severity === "error") ?? result.messages[0];
  return hit ? `${hit.ruleId} (${hit.messageId})` : null;
}
