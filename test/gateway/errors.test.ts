/**
 * How failures reach API clients: Switchyard codes map onto Connect codes with the field path in the message and
 * an ErrorDetail; anything unexpected is INTERNAL without its internal message; unreachable backends are UNAVAILABLE.
 */
import { createServer, type AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { ErrorDetailSchema } from "../../src/gen/switchyard/api/v1/errors_pb.js";
import { toConnectError } from "../../src/gateway/errors.js";
import { switchyardErrorOf } from "../../src/cli/remote/remote-api.js";
import { createPool } from "../../src/store/db.js";

describe("API errors", () => {
  it("map Switchyard codes onto Connect codes", () => {
    const cases: Array<[ErrorCode, Code]> = [
      [ErrorCode.InvalidArgument, Code.InvalidArgument],
      [ErrorCode.InvalidWorkflow, Code.InvalidArgument],
      [ErrorCode.NotFound, Code.NotFound],
      [ErrorCode.FailedPrecondition, Code.FailedPrecondition],
      [ErrorCode.PolicyDenied, Code.PermissionDenied],
      [ErrorCode.Unavailable, Code.Unavailable],
      [ErrorCode.AlreadyExists, Code.AlreadyExists],
      [ErrorCode.PayloadTooLarge, Code.ResourceExhausted],
    ];
    for (const [from, to] of cases) expect(toConnectError(new SwitchyardError(from, "x")).code, from).toBe(to);
  });

  it("put the field path in the message and in the detail", () => {
    const error = toConnectError(new SwitchyardError(ErrorCode.InvalidArgument, "must be positive", { details: { path: "daily_budget" } }));
    expect(error.rawMessage).toBe("daily_budget: must be positive");
    expect(error.findDetails(ErrorDetailSchema)[0]).toMatchObject({ code: "INVALID_ARGUMENT", path: "daily_budget", details: { path: "daily_budget" } });
    // A message that already names the path is left alone.
    expect(toConnectError(new SwitchyardError(ErrorCode.InvalidWorkflow, "steps[1].to: bad", { details: { path: "steps[1].to" } })).rawMessage).toBe("steps[1].to: bad");
  });

  it("never send an internal message; give a reference instead", () => {
    const leaky = new Error('relation "tenant_b_secrets" does not exist at host db-7.internal');
    const error = toConnectError(leaky);
    expect(error.code).toBe(Code.Internal);
    expect(error.rawMessage).toMatch(/^internal error \(ref [0-9a-f]{12}\); the gateway log has the details$/);
    expect(error.rawMessage).not.toContain("tenant_b");
    expect(toConnectError(new SwitchyardError(ErrorCode.Config, "DATABASE_URL=postgres://secret@db")).rawMessage).not.toContain("secret");
  });

  it("report an unreachable Postgres or Redis as UNAVAILABLE", async () => {
    const pool = createPool({ connectionString: "postgres://postgres@127.0.0.1:1/nothing", max: 1 });
    try {
      const refused = await pool.query("SELECT 1").then(() => undefined, (e: unknown) => e);
      const error = toConnectError(refused);
      expect(error.code).toBe(Code.Unavailable);
      expect(error.rawMessage).toBe("a backing service (Postgres) is unreachable; try again shortly");
    } finally {
      await pool.end();
    }
    expect(toConnectError(new Error("Connection is closed.")).rawMessage).toBe("a backing service (Redis) is unreachable; try again shortly");
  });

  it("answer a foreign agent's failure with its own code and message, not as an outage of Postgres", async () => {
    // A real refused connection, as an Agent Card fetch or an A2A call to an agent that is down fails.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const fetchFailure = await fetch(`http://127.0.0.1:${port}/.well-known/agent-card.json`).then(() => undefined, (e: unknown) => e);
    expect(JSON.stringify((fetchFailure as { cause?: { code?: unknown } }).cause?.code)).toMatch(/ECONNREFUSED/);
    const card = new SwitchyardError(ErrorCode.FailedPrecondition, 'foreign agent "billing": Agent Card could not be fetched: connect ECONNREFUSED', {
      cause: fetchFailure,
      details: { reason: "CARD_UNREACHABLE", agentKey: "billing" },
    });
    const cardAnswer = toConnectError(card);
    expect(cardAnswer.code).toBe(Code.FailedPrecondition);
    expect(cardAnswer.rawMessage).toBe('foreign agent "billing": Agent Card could not be fetched: connect ECONNREFUSED');
    const call = new SwitchyardError(ErrorCode.Unavailable, "message/send to http://127.0.0.1:1/a2a failed: fetch failed", { cause: fetchFailure, details: { reason: "A2A_NETWORK" } });
    const callAnswer = toConnectError(call);
    expect(callAnswer.code).toBe(Code.Unavailable);
    expect(callAnswer.rawMessage).toBe("message/send to http://127.0.0.1:1/a2a failed: fetch failed");
    expect(callAnswer.findDetails(ErrorDetailSchema)[0]).toMatchObject({ code: "UNAVAILABLE", details: { reason: "A2A_NETWORK" } });
  });

  it("come back to the CLI as the SwitchyardError the server raised", () => {
    const sent = toConnectError(new SwitchyardError(ErrorCode.InvalidWorkflow, "steps[0].to: bad", { details: { path: "steps[0].to", errors: [{ path: "steps[0].to", reason: "bad" }] } }));
    const received = switchyardErrorOf(sent, "http://gw");
    expect(received).toMatchObject({ code: "INVALID_WORKFLOW", message: "steps[0].to: bad", details: { path: "steps[0].to" } });
    const auth = switchyardErrorOf(new ConnectError("unknown API key", Code.Unauthenticated), "http://gw");
    expect(auth.message).toBe("http://gw refused the API key: unknown API key (check --token / SWITCHYARD_TOKEN)");
  });
});
