/**
 * One configuration variable: its name, the field of `Config` it fills, how its value is parsed and checked (a zod
 * schema), its default (read from `defaultConfig`, never written twice) and the line the configuration table shows.
 */
import type { z } from "zod";
import { defaultConfig } from "./defaults.js";
import type { FieldOf } from "./fields.js";
import type { Config } from "./types.js";

/** `redisUrl`, `bus.keyPrefix`, …: a field of Config (sections are one level deep). */
export type ConfigPath = {
  [K in keyof Config]: Config[K] extends string ? K : `${K}.${keyof Config[K] & string}`;
}[keyof Config];

export type ValueAt<P extends ConfigPath> = P extends `${infer S}.${infer F}`
  ? S extends keyof Config
    ? F extends keyof Config[S]
      ? Config[S][F]
      : never
    : never
  : P extends keyof Config
    ? Config[P]
    : never;

/** Where the tables group variables; README.md and deploy/README.md name groups in their table markers. */
export type Group =
  | "connections"
  | "bus"
  | "coordinator"
  | "shards"
  | "harness"
  | "flags"
  | "gateway"
  | "metrics"
  | "checkpoints"
  | "busAuth"
  | "origin"
  | "foreign"
  | "telemetry"
  | "services"
  | "cli";

/** The processes that read a variable (deploy/README.md's "read by" column). */
export type Reader = "all" | "coordinator" | "gateway" | "harness" | "CLI";

export interface VariableDoc {
  group: Group;
  /** What it means (markdown; links are README.md anchors). */
  doc: string;
  readBy: readonly Reader[];
  /** Never shown in an error message (keys, secrets). */
  secret?: boolean;
  /** Shown in error messages through this (URLs with a password). */
  redact?: (raw: string) => string;
  /** The table's default column when the value alone says too little, e.g. "(off)". */
  defaultText?: string;
}

export interface Variable extends VariableDoc {
  name: string;
  /** The Config field it fills; undefined: read by a derived setting (load.ts). */
  target: ConfigPath | undefined;
  /** Default value (typed), as in `defaultConfig` for a target. */
  fallback: unknown;
  schema: z.ZodType<unknown>;
  accepts: string;
  invalid: readonly string[];
}

export function valueAt<P extends ConfigPath>(config: Config, path: P): ValueAt<P> {
  const [section, field] = path.split(".") as [keyof Config, string | undefined];
  const top = config[section] as unknown;
  return (field === undefined ? top : (top as Record<string, unknown>)[field]) as ValueAt<P>;
}

/** A variable that fills `target`, whose default is `defaultConfig`'s value there. */
export function setting<P extends ConfigPath>(name: string, target: P, field: FieldOf<ValueAt<P>>, doc: VariableDoc): Variable {
  const fallback = valueAt(defaultConfig, target);
  return { name, target, fallback, ...field({ name, fallback }), ...doc };
}

/** A variable read by a derived setting rather than copied into one field (e.g. the OTEL_* switches). */
export function input<T>(name: string, fallback: T, field: FieldOf<T>, doc: VariableDoc): Variable {
  return { name, target: undefined, fallback, ...field({ name, fallback }), ...doc };
}
