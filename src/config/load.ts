/**
 * The environment, validated as a whole against one zod object (a key per variable), then shaped into `Config`.
 * Every bad variable is reported, together, in one CONFIG error: fixing a deployment should take one restart, not
 * one per mistake.
 */
import { z } from "zod";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { ENCRYPTION_KEY_VARIABLE } from "../vault/secret-cipher.js";
import type { Config } from "./types.js";
import type { Variable } from "./variable.js";
import { coreVariables } from "./variables-core.js";
import { flagVariables } from "./variables-flags.js";
import { foreignVariables, patternVariables } from "./variables-foreign.js";
import { editDistance } from "../edit-distance.js";

export type Env = Record<string, string | undefined>;

/** Every variable with a name of its own, in table order. */
export const variables: readonly Variable[] = [...coreVariables, ...flagVariables, ...foreignVariables];

export { patternVariables };

/** The environment's schema: unknown variables pass untouched (the environment is shared with everything else). */
export const envSchema = z.object(Object.fromEntries(variables.map((v) => [v.name, v.schema])));

const byName = new Map(variables.map((v) => [v.name, v]));

/** One bad variable: the complete sentence, and the variable it names. */
export interface ConfigProblem {
  variable: string;
  message: string;
}

/** The problems in `env`, one per bad variable, in table order; empty when it is valid. */
export function configProblems(env: Env): ConfigProblem[] {
  const result = envSchema.safeParse(pick(env));
  return result.success ? [] : problemsOf(result.error, env);
}

/** Validates `env` and builds the configuration; throws one CONFIG error naming every bad variable. */
export function parseConfig(env: Env): Config {
  const result = envSchema.safeParse(pick(env));
  if (!result.success) throw configError(problemsOf(result.error, env));
  const values = result.data as Record<string, unknown>;
  const config: Record<string, unknown> = {};
  for (const variable of variables) {
    if (variable.target === undefined) continue;
    const [section, field] = variable.target.split(".") as [string, string | undefined];
    if (field === undefined) config[section] = values[variable.name];
    else ((config[section] ??= {}) as Record<string, unknown>)[field] = values[variable.name];
  }
  const shaped = config as unknown as Config;
  const named = (values.OTEL_TRACES_EXPORTER as string[]).filter((exporter): exporter is "otlp" | "console" => exporter !== "none");
  const endpointSet = values.OTEL_EXPORTER_OTLP_ENDPOINT !== null || values.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== null;
  shaped.telemetry.tracing = values.OTEL_SDK_DISABLED !== true && (named.length > 0 || endpointSet);
  // `none` in the list means none; an endpoint alone means OTLP (the SDK's own default exporter).
  const explicitNone = (values.OTEL_TRACES_EXPORTER as string[]).includes("none") && named.length === 0;
  shaped.telemetry.exporters = !shaped.telemetry.tracing || explicitNone ? [] : named.length > 0 ? [...new Set(named)] : ["otlp"];
  if (shaped.telemetry.exporters.length === 0) shaped.telemetry.tracing = false;
  // An explicit URL is never replaced by an embedded service, even when it equals the default.
  shaped.services.redisUrlSet = !!env.REDIS_URL;
  shaped.services.databaseUrlSet = !!env.DATABASE_URL;
  shaped.foreign.secrets = tenantSecrets(env);
  return shaped;
}

/** Only our variables: zod never sees (or copies) the rest of a large environment. */
function pick(env: Env): Env {
  const picked: Env = {};
  for (const name of byName.keys()) if (env[name] !== undefined) picked[name] = env[name];
  return picked;
}

function tenantSecrets(env: Env): Record<string, string> {
  const prefix = patternVariables[0].prefix;
  return Object.fromEntries(
    Object.entries(env)
      .filter(([name, value]) => name.startsWith(prefix) && name !== ENCRYPTION_KEY_VARIABLE && value)
      .map(([name, value]) => [name.slice(prefix.length), value!]),
  );
}

function problemsOf(error: z.ZodError, env: Env): ConfigProblem[] {
  const seen = new Map<string, ConfigProblem>();
  for (const issue of error.issues) {
    const name = String(issue.path[0]);
    // A value can break several checks at once (not an integer and too small); the first says it.
    if (seen.has(name)) continue;
    seen.set(name, { variable: name, message: sentence(name, issue, env[name] ?? "") });
  }
  return [...seen.values()];
}

/** `NAME rule, got "value"`; a secret's value is never shown, a URL's password never (see Variable.redact). */
function sentence(name: string, issue: z.core.$ZodIssue, raw: string): string {
  const params = (issue as { params?: { whole?: boolean; shown?: boolean } }).params ?? {};
  if (params.whole) return issue.message;
  const variable = byName.get(name);
  const text = `${name} ${issue.message}`;
  if (params.shown || variable?.secret) return text;
  return `${text}, got ${JSON.stringify(variable?.redact ? variable.redact(raw) : raw)}`;
}

function configError(problems: ConfigProblem[]): SwitchyardError {
  if (problems.length === 1) {
    const [only] = problems as [ConfigProblem];
    return new SwitchyardError(ErrorCode.Config, only.message, { details: { variable: only.variable } });
  }
  const message = `${problems.length} configuration variables are invalid:\n${problems.map((p) => `  - ${p.message}`).join("\n")}`;
  return new SwitchyardError(ErrorCode.Config, message, {
    details: { variable: problems[0]!.variable, variables: problems.map((p) => p.variable) },
  });
}

/** A `SWITCHYARD_*` variable the schema does not know, and the known name it most likely misspells. */
export interface UnknownVariable {
  name: string;
  suggestion: string | undefined;
}

/**
 * `SWITCHYARD_*` variables no setting reads: a misspelt name would otherwise be ignored without a word, and its
 * setting silently left at the default. Other variables are not ours to judge.
 */
export function unknownVariables(env: Env): UnknownVariable[] {
  const prefix = patternVariables[0].prefix;
  return Object.keys(env)
    .filter((name) => name.startsWith("SWITCHYARD_") && !byName.has(name) && !name.startsWith(prefix))
    .sort()
    .map((name) => ({ name, suggestion: closest(name) }));
}

/** The known name at the smallest edit distance, if it is close enough to be a typo (at most 3 edits). */
function closest(name: string): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const known of byName.keys()) {
    const distance = editDistance(name, known);
    if (distance <= 3 && (best === undefined || distance < best.distance)) best = { name: known, distance };
  }
  return best?.name;
}
