/**
 * The kinds of value a configuration variable takes, as zod schemas from the raw environment string (undefined when
 * unset) to the typed value. Each kind also says how the configuration table shows it (`accepts`) and which values
 * it refuses (`invalid`, fed to every variable by the schema walk test, so a new variable is tested for free).
 *
 * A refusal's message is the rule after the variable's name ("must be an integer >= 1"); the loader puts the name
 * in front and, unless the variable is a secret, the value behind. Issues whose `params.shown` is set already show
 * (a safe form of) the value; `params.whole` marks a message that is complete, name included (from a parser that
 * is shared with other callers and names the variable itself).
 */
import { createPrivateKey } from "node:crypto";
import { z } from "zod";
import { parseRedisUrl } from "../bus/redis-url.js";
import { parseCidr } from "../foreign/egress/cidr.js";
import { ErrorCode, SwitchyardError } from "../errors.js";

export interface Field<T> {
  /** Raw value (undefined: unset) → typed value; unset or blank gives the default. */
  schema: z.ZodType<T>;
  /** The accepted form, as the configuration table shows it (markdown). */
  accepts: string;
  /** Values refused; empty for free text. */
  invalid: readonly string[];
}

/** What a field is built from: its variable's name (some messages and parsers need it) and its default. */
export interface FieldContext<T> {
  name: string;
  fallback: T;
}

export type FieldOf<T> = (context: FieldContext<T>) => Field<T>;

type Blank = (raw: string) => boolean;
const empty: Blank = (raw) => raw === "";
const whitespace: Blank = (raw) => raw.trim() === "";

/** Unset (or blank by `blank`) → `fallback`; anything else goes through `inner`. */
function withDefault<T>(inner: z.ZodType<T>, fallback: T, blank: Blank = empty): z.ZodType<T> {
  return z
    .preprocess((raw) => (raw === undefined || (typeof raw === "string" && blank(raw)) ? undefined : raw), inner.optional())
    .transform((value) => (value === undefined ? fallback : value)) as z.ZodType<T>;
}

/** A failure from a parser shared with other callers: its message is complete and names the variable. */
function refuseWhole(ctx: z.core.$RefinementCtx, error: unknown): typeof z.NEVER {
  if (!(error instanceof SwitchyardError)) throw error;
  ctx.issues.push({ code: "custom", message: error.message, input: undefined, params: { whole: true } });
  return z.NEVER;
}

function refuse(ctx: z.core.$RefinementCtx, message: string, shown = false): typeof z.NEVER {
  ctx.issues.push({ code: "custom", message, input: undefined, params: { shown } });
  return z.NEVER;
}

export function integer(min: number, max?: number) {
  const rule = max === undefined ? `must be an integer >= ${min}` : `must be an integer from ${min} to ${max}`;
  return <T extends number | null>({ fallback }: FieldContext<T>): Field<number | T> => ({
    schema: withDefault<number | T>(
      z
        .string()
        .transform(Number)
        .pipe(z.number({ error: rule }).int({ error: rule }).min(min, { error: rule }).max(max ?? Number.MAX_SAFE_INTEGER, { error: rule })),
      fallback,
    ),
    accepts: max === undefined ? `integer ≥ ${min}` : `integer ${min}–${max}`,
    invalid: ["ten", `${min}.5`, String(min - 1), ...(max === undefined ? [] : [String(max + 1)])],
  });
}

export function nonNegativeNumber({ fallback }: FieldContext<number>): Field<number> {
  const rule = "must be a number >= 0";
  return {
    schema: withDefault(z.string().transform(Number).pipe(z.number({ error: rule }).min(0, { error: rule })), fallback),
    accepts: "number ≥ 0",
    invalid: ["cheap", "-1", "Infinity"],
  };
}

/** `true` or `false`, any case. */
export function boolean({ fallback }: FieldContext<boolean>): Field<boolean> {
  const rule = "must be true or false";
  return {
    schema: withDefault(
      z.string().trim().toLowerCase().pipe(z.enum(["true", "false"], { error: rule })).transform((value) => value === "true"),
      fallback,
    ),
    accepts: "`true`, `false`",
    invalid: ["yes", "1"],
  };
}

/** One of `values`, any case, surrounding blanks ignored; blank is the default. */
export function oneOf<const V extends string>(values: readonly [V, ...V[]]) {
  const rule = `must be one of ${values.join(", ")}`;
  return <T extends V | null>({ fallback }: FieldContext<T>): Field<V | T> => ({
    schema: withDefault<V | T>(z.string().trim().toLowerCase().pipe(z.enum(values, { error: rule })), fallback, whitespace),
    accepts: values.map((v) => `\`${v}\``).join(", "),
    invalid: ["verbose"],
  });
}

/** Any text; empty is the default. */
export function text({ fallback }: FieldContext<string>): Field<string> {
  return { schema: withDefault(z.string(), fallback), accepts: "text", invalid: [] };
}

/** Any text; unset or empty is the default (`null`: not set). */
export function optionalText({ fallback }: FieldContext<string | null>): Field<string | null> {
  return { schema: withDefault<string | null>(z.string(), fallback), accepts: "text", invalid: [] };
}

/** The Redis key prefix: set-but-empty is a (legal) empty prefix; braces would move the Cluster hash tag. */
export function keyPrefix({ fallback }: FieldContext<string>): Field<string> {
  const rule = 'must not contain "{" or "}" (Redis Cluster would take them as the hash tag)';
  return {
    schema: withDefault(z.string().refine((value) => !/[{}]/.test(value), { error: rule }), fallback, () => false),
    accepts: "text without `{` `}`",
    invalid: ["sy:{a}:"],
  };
}

/** The password of `scheme://user:password@host`, replaced: URLs may carry credentials. */
export function redactUrl(raw: string): string {
  return raw.replace(/(\/\/[^:@/]*:)[^@/]*@/, "$1***@");
}

/** A URL with one of `schemes` (`http:`); `trimSlash` drops trailing slashes (a base URL). */
export function url(schemes: readonly string[], options: { trimSlash?: boolean } = {}) {
  return <T extends string | null>({ fallback }: FieldContext<T>): Field<string | T> => ({
    schema: withDefault<string | T>(
      z.string().transform((raw, ctx) => {
        let parsed: URL;
        try {
          parsed = new URL(raw);
        } catch {
          return refuse(ctx, "is not a URL");
        }
        if (!schemes.includes(parsed.protocol)) return refuse(ctx, `must use ${schemes.join(" or ")}, got ${parsed.protocol}`, true);
        return options.trimSlash ? raw.replace(/\/+$/, "") : raw;
      }),
      fallback,
    ),
    accepts: `URL (${schemes.map((s) => `\`${s}\``).join(", ")})`,
    invalid: ["not a url", "ftp://example.com"],
  });
}

/** One Redis or a cluster (bus/redis-url.ts); kept as written. */
export function redisUrl({ name, fallback }: FieldContext<string>): Field<string> {
  return {
    schema: withDefault(
      z.string().transform((raw, ctx) => {
        try {
          parseRedisUrl(raw, name);
          return raw;
        } catch (error) {
          return refuseWhole(ctx, error);
        }
      }),
      fallback,
    ),
    accepts: "URL (`redis:`, `rediss:`, `redis+cluster:`, `rediss+cluster:`)",
    invalid: ["http://host:6379", "redis+cluster://a:7000/3"],
  };
}

/**
 * A value a shared parser reads (key rings, keys): its own messages name the variable and never show a secret.
 * `blank`: what counts as unset (default: empty).
 */
export function parsed<T>(parse: (raw: string, name: string) => T, accepts: string, invalid: readonly string[], blank: Blank = empty) {
  return <D>({ name, fallback }: FieldContext<D>): Field<T | D> => ({
    schema: withDefault<T | D>(
      z.string().transform((raw, ctx) => {
        try {
          return parse(raw, name);
        } catch (error) {
          return refuseWhole(ctx, error);
        }
      }),
      fallback,
      blank,
    ),
    accepts,
    invalid,
  });
}

/** A comma-separated list, empty items dropped; `item` parses each (throwing a SwitchyardError) and names nothing. */
export function list<T>(item: (raw: string, where: string) => T, accepts: string, invalid: readonly string[]) {
  return <D>({ name, fallback }: FieldContext<D>): Field<T[] | D> => ({
    schema: withDefault<T[] | D>(
      z.string().transform((raw, ctx) => {
        const items = raw.split(",").map((v) => v.trim()).filter(Boolean);
        const out: T[] = [];
        for (const [index, value] of items.entries()) {
          try {
            out.push(item(value, `${name} item ${index + 1}`));
          } catch (error) {
            return refuseWhole(ctx, error);
          }
        }
        return out;
      }),
      fallback,
    ),
    accepts,
    invalid,
  });
}

/** CIDRs the egress guard admits; each is parsed as the guard will (foreign/egress/cidr.ts). */
export const cidrList = list(
  (raw, where) => {
    try {
      parseCidr(raw, ErrorCode.Config);
      return raw;
    } catch (error) {
      throw new SwitchyardError(ErrorCode.Config, `${where} is ${(error as Error).message}`);
    }
  },
  "CIDRs, comma-separated",
  ["10.0.0.0/33", "127.0.0.0/8,localhost"],
);

/** `*`, or a comma-separated list whose every item `valid` accepts; blank is none. */
export function scopeList(valid: RegExp, example: string) {
  return ({ fallback }: FieldContext<"*" | readonly string[]>): Field<"*" | readonly string[]> => ({
    schema: withDefault<"*" | readonly string[]>(
      z.string().transform((raw, ctx) => {
        if (raw.trim() === "*") return "*" as const;
        const items = raw.split(",").map((item) => item.trim());
        for (const [index, item] of items.entries()) {
          if (valid.test(item)) continue;
          const why = item === "" ? "an empty item" : item === "*" ? `"*" mixed with names (use "*" alone)` : JSON.stringify(item);
          return refuse(ctx, `must be "*" or a comma-separated list like ${example}; item ${index + 1} is ${why}`, true);
        }
        return [...new Set(items)];
      }),
      fallback,
      whitespace,
    ),
    accepts: `\`*\` or a list like \`${example}\``,
    invalid: ["a,,b", "*,x", "has space"],
  });
}

/** An Ed25519 private key in PKCS#8 PEM (what signs audit checkpoints); checked here so a bad key stops start-up. */
export function ed25519Pem({ fallback }: FieldContext<string | null>): Field<string | null> {
  return {
    schema: withDefault<string | null>(
      z.string().transform((raw, ctx) => {
        let key;
        try {
          key = createPrivateKey(raw);
        } catch {
          return refuse(ctx, "does not parse as a PKCS#8 PEM private key", true);
        }
        if (key.asymmetricKeyType !== "ed25519") return refuse(ctx, `must be an Ed25519 private key, got ${String(key.asymmetricKeyType)}`, true);
        return raw;
      }),
      fallback,
    ),
    accepts: "PKCS#8 PEM (Ed25519)",
    invalid: ["-----BEGIN PRIVATE KEY-----\nnot-a-key\n-----END PRIVATE KEY-----"],
  };
}
