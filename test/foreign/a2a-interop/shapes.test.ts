/**
 * Pure units of issue 10's interop rows: which part kind the input modes choose, the text a text-only agent gets,
 * the step output shape, and reading / judging a card's security requirements in both card shapes.
 */
import { describe, expect, it } from "vitest";
import { artifactValues, foreignOutput } from "../../../src/foreign/a2a/artifacts.js";
import { parseAgentCard } from "../../../src/foreign/a2a/card-parse.js";
import { checkCardSecurity, readCardSecurity } from "../../../src/foreign/a2a/card-security.js";
import { inputAsText, modesFor, partKindFor, skillOf, type PartKind } from "../../../src/foreign/a2a/message-parts.js";

describe("part kind from input modes", () => {
  it.each<[string[], PartKind]>([
    [[], "data"],
    [["application/json"], "data"],
    [["text/plain", "application/json"], "data+text"],
    [["*/*", "text/plain"], "data+text"],
    [["*/*"], "data"],
    [["application/vnd.acme+json"], "data"],
    [["text/plain"], "text"],
    [["Text/Plain; charset=utf-8"], "text"],
    [["text/markdown"], "text"],
    [["text"], "text"],
    [["text", "data"], "data+text"],
    [["image/png"], "data"],
  ])("%j → %s", (modes, kind) => {
    expect(partKindFor(modes)).toBe(kind);
  });

  it("renders the input for a text-only agent", () => {
    expect(inputAsText("hi")).toBe("hi");
    expect(inputAsText({ text: "t", other: 1 })).toBe("t");
    expect(inputAsText({ text: 5 })).toBe('{\n  "text": 5\n}');
    expect(inputAsText([1, 2])).toBe("[\n  1,\n  2\n]");
    expect(inputAsText(null)).toBe("null");
    expect(inputAsText(undefined)).toBe("null");
  });

  it("the skill's own modes win; a skill without any falls back to the card's defaults", () => {
    const card = { defaultInputModes: ["application/json"], skillInputModes: { translate: ["text/plain"] } };
    expect(modesFor(card, "translate")).toEqual(["text/plain"]);
    expect(modesFor(card, "echo")).toEqual(["application/json"]);
    expect(modesFor(card, undefined)).toEqual(["application/json"]);
    expect(skillOf({ skill: "translate" }, ["echo"], ["echo", "translate"])).toBe("translate");
    // A skill the card does not list is not used to pick modes (dispatch refuses it anyway: CARD_MISSING_SKILL).
    expect(skillOf({ skill: "nope" }, ["echo"], ["echo"])).toBe("echo");
    expect(skillOf("x", [], ["echo"])).toBeUndefined();
  });
});

describe("step output shape", () => {
  it("one artifact, one value → the value; text parts join into one string", () => {
    expect(foreignOutput([{ artifactId: "a", parts: [{ total: 3 }] }])).toEqual({ total: 3 });
    expect(foreignOutput([{ artifactId: "a", parts: ["line 1", "line 2"] }])).toBe("line 1line 2");
    expect(foreignOutput([{ artifactId: "a", parts: ["only"] }])).toBe("only");
  });

  it("anything else → { artifacts: [...] } with each artifact's values", () => {
    expect(foreignOutput([])).toEqual({ artifacts: [] });
    expect(foreignOutput([{ artifactId: "a", name: "n", parts: [1, 2] }])).toEqual({ artifacts: [{ artifactId: "a", name: "n", parts: [1, 2] }] });
    const file = { file: { name: "r.pdf", mediaType: "application/pdf", url: "https://x.example.com/r.pdf" } };
    expect(
      foreignOutput([
        { artifactId: "a", parts: ["x", { n: 1 }, "y", file] },
        { artifactId: "b", parts: ["z"], append: true },
      ]),
    ).toEqual({ artifacts: [{ artifactId: "a", parts: ["xy", { n: 1 }, file] }, { artifactId: "b", parts: ["z"] }] });
  });

  it("artifactValues keeps non-text parts in order", () => {
    expect(artifactValues([{ a: 1 }, "t1", { b: 2 }, "t2"])).toEqual([{ a: 1 }, "t1t2", { b: 2 }]);
    expect(artifactValues([])).toEqual([]);
  });
});

const CARD_URL = "https://agent.example.com/.well-known/agent-card.json";

describe("card security", () => {
  const v1 = {
    name: "v1",
    supportedInterfaces: [{ url: "https://agent.example.com/rpc", protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: "Bearer" } }, cert: { mtlsSecurityScheme: {} } },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ["text/plain"],
    skills: [{ id: "a", inputModes: ["application/json"] }, { id: "b" }],
  };
  const v03 = {
    protocolVersion: "0.3.0",
    name: "v03",
    url: "https://agent.example.com/rpc",
    securitySchemes: { key: { type: "apiKey", in: "header", name: "X-API-Key" }, oidc: { type: "openIdConnect", openIdConnectUrl: "https://x" } },
    security: [{ key: [] }, { oidc: ["read"] }],
  };

  it("reads v1.0 schemes and requirements, input modes per skill", () => {
    const card = parseAgentCard(v1, CARD_URL);
    expect(card.security).toEqual({ schemes: { bearer: "http", cert: "mutualTLS" }, requirements: [["bearer"]] });
    expect(card.defaultInputModes).toEqual(["text/plain"]);
    expect(card.skillInputModes).toEqual({ a: ["application/json"] });
  });

  it("reads v0.3 schemes and requirements", () => {
    expect(parseAgentCard(v03, CARD_URL).security).toEqual({ schemes: { key: "apiKey", oidc: "openIdConnect" }, requirements: [["key"], ["oidc"]] });
  });

  it("a credential satisfies bearer, apiKey, oauth2 and OIDC; nothing satisfies mTLS alone", () => {
    const v1Security = readCardSecurity(v1);
    // The in-memory oneof form @a2a-js/sdk 1.3 agents serve reads the same.
    expect(readCardSecurity({ securitySchemes: { b: { scheme: { $case: "httpAuthSecurityScheme", value: {} } } } }).schemes).toEqual({ b: "http" });
    expect(checkCardSecurity(v1Security, false)).toMatchObject({ satisfied: false, required: ["bearer (http)"] });
    expect(checkCardSecurity(v1Security, true)).toMatchObject({ satisfied: true });
    expect(checkCardSecurity(readCardSecurity(v03), true).satisfied).toBe(true);
    const mtls = readCardSecurity({ securitySchemes: { cert: { type: "mutualTLS" } }, security: [{ cert: [] }] });
    expect(checkCardSecurity(mtls, true)).toMatchObject({ satisfied: false, unmeetable: expect.stringMatching(/mutual TLS/) });
    const undeclared = readCardSecurity({ security: [{ ghost: [] }] });
    expect(checkCardSecurity(undeclared, true)).toMatchObject({ satisfied: false, required: ["ghost (undeclared)"] });
  });

  it("no requirement, or an anonymous alternative, requires nothing", () => {
    expect(checkCardSecurity(readCardSecurity({ securitySchemes: { b: { type: "http", scheme: "bearer" } } }), false).satisfied).toBe(true);
    expect(checkCardSecurity(readCardSecurity({ securitySchemes: { b: { type: "http" } }, security: [{ b: [] }, {}] }), false).satisfied).toBe(true);
    expect(checkCardSecurity(readCardSecurity({ security: "nonsense", securitySchemes: [1] }), false).satisfied).toBe(true);
  });

  it("an alternative needing two schemes needs both to be meetable", () => {
    const both = readCardSecurity({ securitySchemes: { b: { type: "http" }, c: { type: "mutualTLS" } }, security: [{ b: [], c: [] }] });
    expect(checkCardSecurity(both, true).satisfied).toBe(false);
  });
});
