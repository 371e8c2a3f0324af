/**
 * `switchyard bus key` — derives the bus key of one publisher identity for an operator to hand to that process.
 */
import type { Command } from "commander";
import { GATEWAY_SENDER } from "../../bus/auth/bus-keys.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import type { ActionRunner } from "../action.js";

export function registerBusCommands(program: Command, run: ActionRunner): void {
  const bus = program.command("bus").description("bus authentication keys");
  /**
   * `bus key --sender IDENTITY [--kid KID] [--json]` — derives, from SWITCHYARD_BUS_SECRET (the current secret, or
   * the one named by --kid), the key a standalone harness (`role:NAME`, `team:NAME`) or gateway (`gateway`) signs
   * with, and prints it in the form SWITCHYARD_BUS_KEY takes: `KID:KEY:SENDER`. Nothing is stored; the same
   * secret always derives the same key. Keep the output secret: it lets its holder publish as that identity.
   *
   * JSON: `{"sender":"role:writer","kid":"k1","key":"k1:…:role:writer"}`
   */
  bus
    .command("key")
    .description("print the SWITCHYARD_BUS_KEY of one publisher identity (derived from SWITCHYARD_BUS_SECRET)")
    .requiredOption("--sender <identity>", `role:NAME, team:NAME or ${GATEWAY_SENDER}`)
    .option("--kid <kid>", "derive from this key id of SWITCHYARD_BUS_SECRET (default: the first, current one)")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { sender: string; kid?: string; json?: boolean }) => {
        const { derivePublisherKey, formatPublisherKey } = await import("../../bus/auth/bus-keys.js");
        const secrets = ctx.config.busAuth.secrets;
        if (secrets.length === 0) {
          throw new SwitchyardError(ErrorCode.Config, "SWITCHYARD_BUS_SECRET is not set: bus keys are derived from it", { details: { path: "SWITCHYARD_BUS_SECRET" } });
        }
        const secret = options.kid === undefined ? secrets[0]! : secrets.find((s) => s.kid === options.kid);
        if (!secret) {
          throw new SwitchyardError(ErrorCode.InvalidArgument, `--kid ${options.kid}: SWITCHYARD_BUS_SECRET has key ids ${secrets.map((s) => s.kid).join(", ")}`, { details: { path: "kid" } });
        }
        const key = formatPublisherKey(derivePublisherKey(secret, options.sender));
        if (options.json) return ctx.printJson({ sender: options.sender, kid: secret.kid, key });
        ctx.print(key);
      }),
    );
}
