import { describe, expect, it } from "vitest";
import { accountKeyOf, canonicalBaseUrl, connectionKindOf, displayAddress, targetOf, tryAddress, validateAddress, viewAddress } from "../../src/core/reply-address.js";

describe("reply addresses", () => {
  const forge = { kind: "forge_comment", forge: "github", host: "github.com", repository: "acme/app", number: 12 } as const;
  const slack = { kind: "slack_thread", teamId: "T0001", channel: "C0002", threadTs: "1700000000.000100" } as const;
  const cairn = { kind: "cairn_comment", baseUrl: "https://cairn.example", artifactId: "art_1" } as const;

  it("accepts well-formed addresses of each kind and says which connection answers them", () => {
    expect(validateAddress(forge)).toEqual(forge);
    expect(validateAddress(slack)).toEqual(slack);
    expect(validateAddress(cairn)).toEqual(cairn);
    expect([connectionKindOf(forge), accountKeyOf(forge), targetOf(forge)]).toEqual(["github", "github.com", "acme/app"]);
    expect([connectionKindOf(slack), accountKeyOf(slack), targetOf(slack)]).toEqual(["slack", "T0001", "C0002"]);
    expect([connectionKindOf(cairn), accountKeyOf(cairn), targetOf(cairn)]).toEqual(["cairn", "https://cairn.example", "art_1"]);
    expect(viewAddress(forge)).toEqual({ kind: "forge_comment", display: "github.com/acme/app#12" });
    expect(displayAddress(slack)).toBe("slack T0001 C0002 thread 1700000000.000100");
    expect(viewAddress(null)).toBeNull();
  });

  it.each([
    ["a path in the repository", { ...forge, repository: "acme/../../orgs" }],
    ["a third path segment", { ...forge, repository: "acme/app/issues" }],
    ["a host with a path", { ...forge, host: "evil.example/x" }],
    ["a host with credentials", { ...forge, host: "user@evil.example" }],
    ["an upper-case host", { ...forge, host: "GitHub.com" }],
    ["a zero issue number", { ...forge, number: 0 }],
    ["a fractional issue number", { ...forge, number: 1.5 }],
    ["a numeric string", { ...forge, number: "12" }],
    ["an unknown forge", { ...forge, forge: "gitlab" }],
    ["a channel with a slash", { ...slack, channel: "C1/../x" }],
    ["a thread ts that is not a ts", { ...slack, threadTs: "now" }],
    ["a base URL with a path", { ...cairn, baseUrl: "https://cairn.example/v1" }],
    ["a non-canonical base URL", { ...cairn, baseUrl: "https://Cairn.example/" }],
    ["an artifact id with a slash", { ...cairn, artifactId: "a/b" }],
    ["an unknown kind", { kind: "email", to: "x@y" }],
  ])("refuses %s", (_why, value) => {
    expect(() => validateAddress(value)).toThrow(/not a reply address/);
    expect(tryAddress(value)).toBeUndefined();
  });

  it("canonicalises base URLs to a lower-case origin and refuses anything else", () => {
    expect(canonicalBaseUrl("https://Cairn.Example:8443/")).toBe("https://cairn.example:8443");
    expect(canonicalBaseUrl("https://cairn.example/path")).toBeUndefined();
    expect(canonicalBaseUrl("ftp://cairn.example")).toBeUndefined();
    expect(canonicalBaseUrl("https://u:p@cairn.example")).toBeUndefined();
    expect(canonicalBaseUrl("not a url")).toBeUndefined();
  });
});
