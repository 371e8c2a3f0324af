/**
 * The configuration schema, walked: every variable's refusals name it (data-driven, so a variable added to
 * src/config/variables-*.ts is covered without touching this file), defaults come from `defaultConfig`, and every
 * field of `Config` is filled by exactly one variable or one derived setting.
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import { configProblems, defaultConfig, loadConfig } from "../../src/config/index.js";
import { variables } from "../../src/config/load.js";
import { valueAt, type ConfigPath } from "../../src/config/variable.js";
import { LOG_LEVELS } from "../../src/config/variables-core.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";

/** Fields computed from several variables (or a family of them) in load.ts rather than copied from one. */
const DERIVED = ["telemetry.tracing", "telemetry.exporters", "services.redisUrlSet", "services.databaseUrlSet", "foreign.secrets"];

function configError(env: Record<string, string>): SwitchyardError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(SwitchyardError);
    expect((error as SwitchyardError).code).toBe(ErrorCode.Config);
    return error as SwitchyardError;
  }
  throw new Error(`expected a CONFIG error for ${JSON.stringify(env)}`);
}

function leafPaths(): string[] {
  return Object.entries(defaultConfig).flatMap(([key, value]) =>
    typeof value === "object" && value !== null && !Array.isArray(value) ? Object.keys(value).map((field) => `${key}.${field}`) : [key],
  );
}

describe("configuration schema", () => {
  it("an empty environment gives exactly defaultConfig", () => {
    expect(loadConfig({})).toEqual(defaultConfig);
  });

  it("fills every field of Config from exactly one variable or one derived setting", () => {
    const targets = variables.flatMap((v) => (v.target === undefined ? [] : [v.target]));
    expect(new Set(targets).size, "a field filled by two variables").toBe(targets.length);
    expect([...targets, ...DERIVED].sort()).toEqual(leafPaths().sort());
    expect(new Set(variables.map((v) => v.name)).size, "a variable listed twice").toBe(variables.length);
  });

  it("takes each variable's default as written in the table (the default, set explicitly, changes nothing)", () => {
    for (const variable of variables) {
      if (variable.target === undefined || !["string", "number", "boolean"].includes(typeof variable.fallback)) continue;
      const config = loadConfig({ [variable.name]: String(variable.fallback) });
      expect(valueAt(config, variable.target as ConfigPath), variable.name).toEqual(valueAt(defaultConfig, variable.target as ConfigPath));
    }
  });

  it("refuses every constrained variable's bad values with one CONFIG error naming the variable (and never a secret)", () => {
    let checked = 0;
    for (const variable of variables) {
      // A variable with no refusals must say it takes any text, so a new constrained one cannot skip this walk.
      if (variable.invalid.length === 0) expect(variable.accepts, `${variable.name} refuses nothing`).toBe("text");
      for (const bad of variable.invalid) {
        const error = configError({ [variable.name]: bad });
        expect(error.details, `${variable.name}=${JSON.stringify(bad)}`).toEqual({ variable: variable.name });
        expect(error.message).toContain(variable.name);
        if (variable.secret) expect(error.message, `${variable.name} shows its value`).not.toContain(bad);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(60);
  });

  it("reports every bad variable at once, in table order", () => {
    const bad = variables.filter((v) => v.invalid.length > 0);
    const env = Object.fromEntries(bad.map((v) => [v.name, v.invalid[0]!]));
    const error = configError(env);
    const names = bad.map((v) => v.name);
    expect(error.details).toEqual({ variable: names[0], variables: names });
    expect(error.message).toMatch(new RegExp(`^${names.length} configuration variables are invalid:\n`));
    for (const name of names) expect(error.message).toContain(`\n  - ${name}`);
    expect(configProblems(env).map((p) => p.variable)).toEqual(names);
    expect(configProblems({})).toEqual([]);
  });
});

describe("SWITCHYARD_LOG_LEVEL", () => {
  it("accepts exactly pino's levels, in any case", () => {
    expect([...LOG_LEVELS].sort()).toEqual([...Object.keys(pino.levels.values), "silent"].sort());
    for (const level of LOG_LEVELS) {
      expect(loadConfig({ SWITCHYARD_LOG_LEVEL: level }).logLevel).toBe(level);
      expect(() => pino({ level: loadConfig({ SWITCHYARD_LOG_LEVEL: ` ${level.toUpperCase()} ` }).logLevel })).not.toThrow();
    }
    expect(loadConfig({ SWITCHYARD_LOG_LEVEL: "" }).logLevel).toBe("info");
  });

  it("refuses anything else naming the variable and the value", () => {
    const error = configError({ SWITCHYARD_LOG_LEVEL: "verbose" });
    expect(error.message).toBe('SWITCHYARD_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"');
    expect(error.details).toEqual({ variable: "SWITCHYARD_LOG_LEVEL" });
  });
});

describe("variables with their own rules", () => {
  it("SWITCHYARD_KEY_PREFIX: braces are refused by name; set but empty is an empty prefix", () => {
    expect(configError({ SWITCHYARD_KEY_PREFIX: "sy:{x}:" }).message).toBe(
      'SWITCHYARD_KEY_PREFIX must not contain "{" or "}" (Redis Cluster would take them as the hash tag), got "sy:{x}:"',
    );
    expect(loadConfig({ SWITCHYARD_KEY_PREFIX: "" }).bus.keyPrefix).toBe("");
    expect(loadConfig({ SWITCHYARD_KEY_PREFIX: "acme:" }).bus.keyPrefix).toBe("acme:");
  });

  it("never shows a URL's password, nor a secret's value", () => {
    const database = configError({ DATABASE_URL: "postgres://app:hunter2@db:notaport/sy" });
    expect(database.message).toBe('DATABASE_URL is not a URL, got "postgres://app:***@db:notaport/sy"');
    expect(configError({ REDIS_URL: "http://app:hunter2@redis:6379" }).message).not.toContain("hunter2");
    expect(configError({ SWITCHYARD_BUS_SECRET: "k1:hunter2" }).message).not.toContain("hunter2");
    expect(configError({ SWITCHYARD_CHECKPOINT_KEY: "hunter2" }).message).toBe("SWITCHYARD_CHECKPOINT_KEY does not parse as a PKCS#8 PEM private key");
  });

  it("checks list items one by one and names the item", () => {
    expect(loadConfig({ SWITCHYARD_EGRESS_ALLOWED_NETWORKS: " 127.0.0.0/8 ,, ::1/128" }).foreign.allowedNetworks).toEqual(["127.0.0.0/8", "::1/128"]);
    expect(configError({ SWITCHYARD_EGRESS_ALLOWED_NETWORKS: "127.0.0.0/8,10.0.0.0/40" }).message).toMatch(
      /^SWITCHYARD_EGRESS_ALLOWED_NETWORKS item 2 is not a CIDR: "10\.0\.0\.0\/40"/,
    );
    expect(loadConfig({ SWITCHYARD_TRUSTED_PROXIES: "10.1.0.0/16, 192.0.2.10,fd00:ab::/32" }).gateway.trustedProxies).toEqual(["10.1.0.0/16", "192.0.2.10", "fd00:ab::/32"]);
    expect(loadConfig({}).gateway.trustedProxies).toEqual([]);
    expect(configError({ SWITCHYARD_TRUSTED_PROXIES: "10.1.0.0/16,ingress-nginx" }).message).toMatch(/^SWITCHYARD_TRUSTED_PROXIES item 2 is not a CIDR: "ingress-nginx"/);
    expect(configError({ OTEL_TRACES_EXPORTER: "otlp,zipkin" }).message).toBe('OTEL_TRACES_EXPORTER item 2 must be one of otlp, console, none, got "zipkin"');
  });

  it("turns tracing on only for an exporter or an endpoint, never with OTEL_SDK_DISABLED=true", () => {
    expect(loadConfig({}).telemetry.tracing).toBe(false);
    expect(loadConfig({ OTEL_TRACES_EXPORTER: "none" }).telemetry.tracing).toBe(false);
    expect(loadConfig({ OTEL_TRACES_EXPORTER: "OTLP" }).telemetry.tracing).toBe(true);
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }).telemetry.tracing).toBe(true);
    expect(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://collector/v1/traces" }).telemetry.tracing).toBe(true);
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "TRUE" }).telemetry.tracing).toBe(false);
    expect(configError({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }).details).toEqual({ variable: "OTEL_EXPORTER_OTLP_ENDPOINT" });
  });

  it("exports to what OTEL_TRACES_EXPORTER names: console is not OTLP; an endpoint alone means OTLP; none means none", () => {
    const telemetry = (env: Record<string, string>) => loadConfig(env).telemetry;
    expect(telemetry({ OTEL_TRACES_EXPORTER: "console" })).toMatchObject({ tracing: true, exporters: ["console"] });
    expect(telemetry({ OTEL_TRACES_EXPORTER: "otlp,console,otlp" })).toMatchObject({ tracing: true, exporters: ["otlp", "console"] });
    expect(telemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toMatchObject({ tracing: true, exporters: ["otlp"] });
    expect(telemetry({ OTEL_TRACES_EXPORTER: "console", OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }).exporters).toEqual(["console"]);
    expect(telemetry({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toMatchObject({ tracing: false, exporters: [] });
    expect(telemetry({})).toMatchObject({ tracing: false, exporters: [] });
  });

  it("records whether REDIS_URL / DATABASE_URL were set, even to the default", () => {
    expect(loadConfig({}).services).toMatchObject({ redisUrlSet: false, databaseUrlSet: false });
    expect(loadConfig({ REDIS_URL: defaultConfig.redisUrl, DATABASE_URL: "" }).services).toMatchObject({ redisUrlSet: true, databaseUrlSet: false });
  });
});
