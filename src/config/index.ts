/**
 * The only module that reads the environment. `loadConfig()` is called once at process start-up; everything
 * else receives the resulting object (or a slice of it) through options.
 *
 * Every variable is described once, in src/config/variables-*.ts (name, type, bounds, default, doc line and the
 * field it fills); the loader validates the whole environment against that schema, and `npm run docs:config`
 * writes the README's configuration tables from it.
 */
import { parseConfig, type Env } from "./load.js";
import type { Config } from "./types.js";

export type * from "./types.js";
export { defaultConfig } from "./defaults.js";
export { configProblems, unknownVariables, type ConfigProblem, type UnknownVariable } from "./load.js";

/** Reads configuration from the environment (default: `process.env`), validating every value. */
export function loadConfig(env: Env = process.env): Config {
  return parseConfig(env);
}
