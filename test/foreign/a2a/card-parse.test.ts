import { describe, expect, it } from "vitest";
import { dialectOf, parseAgentCard } from "../../../src/foreign/a2a/card-parse.js";
import { chooseDialect } from "../../../src/foreign/a2a/agent-card.js";
import { ErrorCode, SwitchyardError } from "../../../src/errors.js";

const CARD_URL = "https://agent.example.com/.well-known/agent-card.json";

function v1Card(interfaces: unknown[], extra: Record<string, unknown> = {}) {
  return {
    name: "agent",
    description: "d",
    version: "1",
    supportedInterfaces: interfaces,
    capabilities: { pushNotifications: true },
    skills: [{ id: "summarize", name: "s" }],
    ...extra,
  };
}

function invalidReason(fn: () => unknown): { reason: unknown; path: unknown } {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SwitchyardError);
    expect((error as SwitchyardError).code).toBe(ErrorCode.InvalidArgument);
    return { reason: (error as SwitchyardError).details.reason, path: (error as SwitchyardError).details.path };
  }
  throw new Error("expected a SwitchyardError");
}

describe("dialectOf", () => {
  it.each([
    ["1.0", "1.0"],
    ["1.2", "1.0"],
    ["1.0.3", "1.0"],
    ["0.3", "0.3"],
    ["0.3.0", "0.3"],
    ["0.9", "0.3"],
    ["", "0.3"],
    ["0.2.9", undefined],
    ["2.0", undefined],
    ["v1", undefined],
  ])("%j → %j", (version, dialect) => {
    expect(dialectOf(version)).toBe(dialect);
  });
});

describe("parseAgentCard", () => {
  it("reads a v1.0 card: skills, push, the JSON-RPC 1.0 endpoint (other bindings ignored)", () => {
    const card = parseAgentCard(
      v1Card([
        { url: "https://agent.example.com/grpc", protocolBinding: "GRPC", protocolVersion: "1.0" },
        { url: "https://agent.example.com/rpc", protocolBinding: "jsonrpc", protocolVersion: "1.0", tenant: "t1" },
      ]),
      CARD_URL,
    );
    expect(card).toEqual({
      name: "agent",
      skills: ["summarize"],
      pushNotifications: true,
      endpoints: { "1.0": { url: "https://agent.example.com/rpc", tenant: "t1" } },
      defaultInputModes: [],
      skillInputModes: {},
      security: { schemes: {}, requirements: [] },
    });
  });

  it("reads both dialects from a v1.0 card that lists a 0.3 interface; the first entry per dialect wins", () => {
    const card = parseAgentCard(
      v1Card([
        { url: "https://a.example.com/v03", protocolBinding: "JSONRPC", protocolVersion: "0.3" },
        { url: "https://a.example.com/v1", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
        { url: "https://a.example.com/v1-second", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      ]),
      CARD_URL,
    );
    expect(card.endpoints).toEqual({ "1.0": { url: "https://a.example.com/v1" }, "0.3": { url: "https://a.example.com/v03" } });
    expect(chooseDialect(card.endpoints, "auto")).toBe("1.0");
    expect(chooseDialect(card.endpoints, "0.3")).toBe("0.3");
  });

  it("reads a pure v0.3 card from url + preferredTransport + protocolVersion", () => {
    const card = parseAgentCard(
      { protocolVersion: "0.3.0", name: "old", url: "https://old.example.com/a2a", preferredTransport: "JSONRPC", capabilities: { pushNotifications: true }, skills: [] },
      CARD_URL,
    );
    expect(card.endpoints).toEqual({ "0.3": { url: "https://old.example.com/a2a" } });
    expect(chooseDialect(card.endpoints, "auto")).toBe("0.3");
    expect(chooseDialect(card.endpoints, "1.0")).toBeUndefined();
  });

  it("takes a v0.3 JSON-RPC additional interface when the preferred transport is another binding", () => {
    const card = parseAgentCard(
      {
        protocolVersion: "0.3.0",
        url: "https://old.example.com/grpc",
        preferredTransport: "GRPC",
        additionalInterfaces: [
          { url: "https://old.example.com/grpc", transport: "GRPC" },
          { url: "https://old.example.com/jsonrpc", transport: "JSONRPC" },
        ],
      },
      CARD_URL,
    );
    expect(card.endpoints).toEqual({ "0.3": { url: "https://old.example.com/jsonrpc" } });
  });

  it("treats a v0.3 card without protocolVersion as 0.3 and one at 0.2.x as unspoken", () => {
    expect(parseAgentCard({ url: "https://x.example.com/a2a" }, CARD_URL).endpoints).toEqual({ "0.3": { url: "https://x.example.com/a2a" } });
    expect(parseAgentCard({ url: "https://x.example.com/a2a", protocolVersion: "0.2.9" }, CARD_URL).endpoints).toEqual({});
  });

  it("unites a superset card's v0.3 fields with its supportedInterfaces", () => {
    const card = parseAgentCard(
      {
        protocolVersion: "0.3",
        url: "https://s.example.com/legacy",
        preferredTransport: "JSONRPC",
        supportedInterfaces: [{ url: "https://s.example.com/v1", protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
      },
      CARD_URL,
    );
    expect(card.endpoints).toEqual({ "1.0": { url: "https://s.example.com/v1" }, "0.3": { url: "https://s.example.com/legacy" } });
  });

  it("resolves relative interface URLs against the card URL and ignores non-http(s) or credentialed ones", () => {
    const card = parseAgentCard(
      v1Card([
        { url: "ftp://agent.example.com/rpc", protocolBinding: "JSONRPC", protocolVersion: "0.3" },
        { url: "https://user:pw@agent.example.com/rpc", protocolBinding: "JSONRPC", protocolVersion: "0.3" },
        { url: "/a2a/rpc", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      ]),
      CARD_URL,
    );
    expect(card.endpoints).toEqual({ "1.0": { url: "https://agent.example.com/a2a/rpc" } });
  });

  it("counts push support only when capabilities.pushNotifications is exactly true", () => {
    expect(parseAgentCard(v1Card([], { capabilities: {} }), CARD_URL).pushNotifications).toBe(false);
    expect(parseAgentCard(v1Card([], { capabilities: undefined }), CARD_URL).pushNotifications).toBe(false);
    expect(parseAgentCard(v1Card([], { capabilities: { pushNotifications: false } }), CARD_URL).pushNotifications).toBe(false);
  });

  it.each([
    ["a list instead of an object", [], "$"],
    ["a non-string name", { name: 5 }, "$.name"],
    ["skills that are not a list", { skills: "summarize" }, "$.skills"],
    ["a skill without an id", { skills: [{ name: "x" }] }, "$.skills[0].id"],
    ["a non-boolean pushNotifications", { capabilities: { pushNotifications: "yes" } }, "$.capabilities.pushNotifications"],
    ["supportedInterfaces that are not a list", { supportedInterfaces: {} }, "$.supportedInterfaces"],
    ["an interface without a url", { supportedInterfaces: [{ protocolBinding: "JSONRPC" }] }, "$.supportedInterfaces[0]"],
    ["too many skills", { skills: Array.from({ length: 501 }, (_, i) => ({ id: `s${i}` })) }, "$.skills"],
  ])("refuses %s (INVALID_CARD)", (_what, card, path) => {
    expect(invalidReason(() => parseAgentCard(card, CARD_URL))).toEqual({ reason: "INVALID_CARD", path });
  });
});
