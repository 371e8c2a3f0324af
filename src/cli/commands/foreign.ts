/**
 * `switchyard foreign register|list|disable` — the tenant's registry of foreign agents (A2A agents and MCP tools), for
 * the operator (`--tenant`), through the ForeignAgentService client (remote/foreign-api.ts: the gateway's handlers
 * run in-process against the database; Register checks the agent from this process). The registry holds no secret:
 * `--credential-ref` is the NAME of one.
 */
import { InvalidArgumentError, type Command } from "commander";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { requireTenant } from "../args.js";
import type { ActionRunner } from "../action.js";
import { formatTable } from "../output.js";
import { FOREIGN_DELIVERIES, FOREIGN_PROTOCOLS, type ForeignDelivery, type ForeignProtocol } from "../remote/foreign-choices.js";
import type { ForeignAgentInput, ForeignAgentRecord } from "../remote/foreign-api.js";

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function wholeNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isInteger(n) || n < 0) throw new InvalidArgumentError("expected a whole number >= 0");
  return n;
}

function nonNegative(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError("expected a number >= 0");
  return n;
}

function protocolOption(value: string): ForeignProtocol {
  if (!(FOREIGN_PROTOCOLS as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${FOREIGN_PROTOCOLS.join(", ")}`);
  return value as ForeignProtocol;
}

function deliveryOption(value: string): ForeignDelivery {
  if (!(FOREIGN_DELIVERIES as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${FOREIGN_DELIVERIES.join(", ")}`);
  return value as ForeignDelivery;
}

/** The base URL's host (and explicit port): the default allowlist entry. */
function hostOf(baseUrl: string): string {
  try {
    const url = new URL(baseUrl);
    return url.port ? `${url.hostname}:${url.port}` : url.hostname;
  } catch {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `--url is not a URL: ${JSON.stringify(baseUrl)}`, { details: { path: "--url" } });
  }
}

export function foreignAgentJson(agent: ForeignAgentRecord): Record<string, unknown> {
  return {
    orgId: agent.orgId,
    agentKey: agent.agentKey,
    baseUrl: agent.baseUrl,
    protocol: agent.protocol,
    credentialRef: agent.credentialRef,
    allowHost: agent.allowHost,
    skills: agent.skills,
    clearanceCeiling: agent.clearanceCeiling,
    costEstimate: agent.costEstimate,
    enabled: agent.enabled,
    idempotent: agent.idempotent,
    tool: agent.tool,
    delivery: agent.delivery,
    sendFields: agent.sendFields,
    costPerSecond: agent.costPerSecond,
    createdAt: agent.createdAt.toISOString(),
    updatedAt: agent.updatedAt.toISOString(),
  };
}

interface RegisterOptions {
  tenant?: string;
  url?: string;
  skill?: string[];
  allow?: string;
  clearance?: number;
  protocol?: ForeignProtocol;
  cost?: number;
  credentialRef?: string;
  idempotent?: boolean;
  tool?: string;
  delivery?: ForeignDelivery;
  send?: string[];
  costPerSecond?: number;
  json?: boolean;
}

export function registerForeignCommands(program: Command, run: ActionRunner): void {
  const foreign = program.command("foreign").description("register, list and disable the tenant's foreign agents (A2A and MCP)");

  /**
   * `foreign register KEY --tenant T --url BASE [--skill ID]… [--allow HOST] [--clearance N] [--protocol auto|1.0|0.3|mcp]
   * [--tool NAME] [--delivery auto|push|poll] [--send FIELD]… [--cost N] [--cost-per-second N] [--credential-ref NAME]
   * [--idempotent] [--json]` — JSON: the agent (see `foreign list --json`).
   */
  const register = foreign.command("register");
  register
    .description("register a foreign agent: steps and delegations to foreign:KEY reach it over A2A (or call an MCP tool)")
    .argument("<key>", "agent key: [A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
    .option("--tenant <tenant>", "tenant id")
    .option("--url <base>", "the agent's base URL (required); its card is read from BASE/.well-known/agent-card.json (or, on a 404 there, BASE/.well-known/agent.json)")
    .option("--skill <id>", "a skill the agent's card must list (repeatable)", collect)
    .option("--allow <host>", "egress allowlist entry: host[:port] or *.domain (default: the URL's host and port)")
    .option("--clearance <level>", "clearance ceiling: hops with a higher floor are refused (default 0)", wholeNumber)
    .option("--protocol <version>", "A2A dialect: auto (prefer 1.0), 1.0 or 0.3; or mcp: call --tool over MCP (Streamable HTTP at --url)", protocolOption)
    .option("--tool <name>", "the MCP tool to call (protocol mcp only)")
    .option("--delivery <mode>", "A2A results by push or poll: auto (push when the card offers it), push or poll (e.g. behind a firewall)", deliveryOption)
    .option("--send <field>", "an input field that may leave the perimeter: a top-level key or a dotted path such as task.city (repeatable; default: the whole input)", collect)
    .option("--cost <units>", "cost per call: the estimate charged when the agent reports no usage", nonNegative)
    .option("--cost-per-second <units>", "cost per second of elapsed time, added to --cost when the agent reports no usage", nonNegative)
    .option("--credential-ref <name>", "NAME of the credential in the secret store (never the secret)")
    .option("--idempotent", "a timed-out or failed hop may be re-sent to this agent under the step's retries (default: never re-sent, fails closed)")
    .option("--json", "print the agent as JSON")
    .action(
      run(async (ctx, key: string, options: RegisterOptions) => {
        const { withForeignApi } = await import("../remote/foreign-api.js");
        const orgId = requireTenant(options.tenant);
        // The program's global `--url` (the gateway of remote commands) takes the flag wherever it is written.
        const baseUrl = options.url ?? register.optsWithGlobals<{ url?: string }>().url;
        if (!baseUrl) throw new SwitchyardError(ErrorCode.InvalidArgument, "--url must name the agent's base URL", { details: { path: "--url" } });
        const input: ForeignAgentInput = {
          agentKey: key,
          baseUrl,
          allowHost: options.allow ?? hostOf(baseUrl),
          skills: options.skill ?? [],
          ...(options.clearance !== undefined ? { clearanceCeiling: options.clearance } : {}),
          ...(options.protocol !== undefined ? { protocol: options.protocol } : {}),
          ...(options.cost !== undefined ? { costEstimate: options.cost } : {}),
          ...(options.credentialRef !== undefined ? { credentialRef: options.credentialRef } : {}),
          ...(options.idempotent ? { idempotent: true } : {}),
          ...(options.tool !== undefined ? { tool: options.tool } : {}),
          ...(options.delivery !== undefined ? { delivery: options.delivery } : {}),
          ...(options.send !== undefined ? { sendFields: options.send } : {}),
          ...(options.costPerSecond !== undefined ? { costPerSecond: options.costPerSecond } : {}),
        };
        // The agent is reached from THIS process, through the same guarded channel the coordinators use.
        const { agent, warnings, check } = await withForeignApi(ctx, orgId, (api) => api.register(input));
        for (const warning of warnings) ctx.note(`warning: foreign:${key}: ${warning}`);
        if (check?.summary) ctx.note(`checked foreign:${key}: ${check.summary}, results by ${check.delivery}`);
        if (options.json) return ctx.printJson(foreignAgentJson(agent));
        ctx.print(`registered foreign:${agent.agentKey} for tenant ${orgId}: ${agent.baseUrl} (allow ${agent.allowHost}, protocol ${agent.protocol}, clearance ≤ ${agent.clearanceCeiling})`);
      }),
    );

  /** `foreign list --tenant T [--json]` — JSON: `{"agents":[{"orgId","agentKey","baseUrl","protocol","credentialRef","allowHost","skills","clearanceCeiling","costEstimate","enabled","idempotent","tool","delivery","sendFields","costPerSecond","createdAt","updatedAt"}]}` */
  foreign
    .command("list")
    .description("list the tenant's foreign agents")
    .option("--tenant <tenant>", "tenant id")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; json?: boolean }) => {
        const { withForeignApi } = await import("../remote/foreign-api.js");
        const orgId = requireTenant(options.tenant);
        const agents = await withForeignApi(ctx, orgId, (api) => api.list());
        if (options.json) return ctx.printJson({ agents: agents.map(foreignAgentJson) });
        if (agents.length === 0) return ctx.print(`no foreign agents for tenant ${orgId}`);
        ctx.print(
          formatTable(
            ["agent", "url", "allow", "protocol", "skills", "clearance", "cost", "enabled", "idempotent"],
            agents.map((a) => [a.agentKey, a.baseUrl, a.allowHost, a.protocol, a.skills.join(",") || "-", a.clearanceCeiling, a.costEstimate, a.enabled ? "yes" : "no", a.idempotent ? "yes" : "no"]),
          ),
        );
      }),
    );

  /** `foreign disable KEY --tenant T [--json]` — hops to the agent fail closed (FOREIGN_UNAVAILABLE) from now on. */
  foreign
    .command("disable")
    .description("disable a foreign agent: hops to it fail closed until it is enabled again")
    .argument("<key>", "agent key")
    .option("--tenant <tenant>", "tenant id")
    .option("--json", "print the agent as JSON")
    .action(
      run(async (ctx, key: string, options: { tenant?: string; json?: boolean }) => {
        const { withForeignApi } = await import("../remote/foreign-api.js");
        const orgId = requireTenant(options.tenant);
        const agent = await withForeignApi(ctx, orgId, (api) => api.disable(key));
        if (options.json) return ctx.printJson(foreignAgentJson(agent));
        ctx.print(`disabled foreign:${agent.agentKey} for tenant ${orgId}`);
      }),
    );
}
