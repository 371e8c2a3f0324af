/**
 * The pure rules behind the egress guard: CIDR parsing and matching (IPv4, IPv6, IPv4-mapped), the refused address
 * ranges with the operator's admission, and the per-agent host allowlist.
 */
import { describe, expect, it } from "vitest";
import { ErrorCode, SwitchyardError } from "../../../src/errors.js";
import { checkAddress } from "../../../src/foreign/egress/address-policy.js";
import { CidrSet, normalizeIp, parseCidr } from "../../../src/foreign/egress/cidr.js";
import { HostAllowlist } from "../../../src/foreign/egress/host-allowlist.js";

const NONE = new CidrSet([]);

describe("CIDR", () => {
  it("parses IPv4, IPv6 and bare addresses", () => {
    expect(parseCidr("10.0.0.0/8")).toEqual({ network: "10.0.0.0", prefix: 8, family: 4 });
    expect(parseCidr(" fd00::/8 ")).toEqual({ network: "fd00::", prefix: 8, family: 6 });
    expect(parseCidr("127.0.0.2")).toEqual({ network: "127.0.0.2", prefix: 32, family: 4 });
    expect(parseCidr("::1")).toEqual({ network: "::1", prefix: 128, family: 6 });
  });

  it("reads an IPv4-mapped network's IPv6 prefix as the IPv4 prefix it maps", () => {
    expect(parseCidr("::ffff:10.0.0.0/104")).toEqual({ network: "10.0.0.0", prefix: 8, family: 4 });
    expect(parseCidr("[::ffff:7f00:0]/96")).toEqual({ network: "127.0.0.0", prefix: 0, family: 4 });
    expect(parseCidr("::ffff:127.0.0.1")).toEqual({ network: "127.0.0.1", prefix: 32, family: 4 });
    const set = new CidrSet(["::ffff:10.20.0.0/112"]);
    expect(set.contains("10.20.3.4")).toBe(true);
    expect(set.contains("::ffff:10.20.3.4")).toBe(true);
    expect(set.contains("10.21.0.1")).toBe(false);
  });

  it.each(["", "10.0.0.0/33", "::/129", "10.0.0/8", "10.0.0.0/-1", "10.0.0.0/8/8", "example.com/24", "10.0.0.0/ 8", "::ffff:10.0.0.0/8", "::ffff:10.0.0.0/95", "::ffff:10.0.0.0/129"])("refuses %j", (text) => {
    expect(() => parseCidr(text, ErrorCode.Config)).toThrowError(expect.objectContaining({ code: ErrorCode.Config }));
  });

  it("matches addresses in IPv4 and IPv6 networks, IPv4-mapped IPv6 included", () => {
    const set = new CidrSet(["127.0.0.0/8", "2001:db8:1::/48"]);
    expect(set.contains("127.0.0.2")).toBe(true);
    expect(set.contains("127.255.255.255")).toBe(true);
    expect(set.contains("128.0.0.1")).toBe(false);
    expect(set.contains("::ffff:127.0.0.9")).toBe(true);
    expect(set.contains("[::ffff:7f00:1]")).toBe(true);
    expect(set.contains("2001:db8:1:ffff::1")).toBe(true);
    expect(set.contains("2001:db8:2::1")).toBe(false);
    expect(set.contains("not-an-ip")).toBe(false);
  });

  it("normalises brackets, zone ids, spellings and mapped addresses", () => {
    expect(normalizeIp("[2001:0DB8:0:0::1]")).toEqual({ address: "2001:db8::1", family: 6 });
    expect(normalizeIp("fe80::1%eth0")).toEqual({ address: "fe80::1", family: 6 });
    expect(normalizeIp("::ffff:169.254.169.254")).toEqual({ address: "169.254.169.254", family: 4 });
    expect(normalizeIp("agent.example")).toBeUndefined();
  });
});

describe("address policy", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.0.0.2", "loopback"],
    ["::1", "loopback"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["169.254.169.254", "metadata"],
    ["fd00:ec2::254", "metadata"],
    ["169.254.1.1", "link-local"],
    ["fe80::1", "link-local"],
    ["100.64.0.1", "cgnat"],
    ["100.127.255.254", "cgnat"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["ff02::1", "multicast"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["255.255.255.255", "broadcast"],
    ["0.1.2.3", "reserved"],
    ["192.0.2.1", "reserved"],
    ["240.0.0.1", "reserved"],
    ["2001:db8::1", "reserved"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:169.254.169.254", "metadata"],
    ["64:ff9b::a00:1", "private"],
    ["2002:a9fe:a9fe::1", "metadata"],
  ])("refuses %s as %s", (address, range) => {
    expect(checkAddress(address, NONE)).toMatchObject({ allowed: false, range });
  });

  it.each(["93.184.215.14", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "64:ff9b::808:808", "::ffff:8.8.8.8"])(
    "allows public unicast %s",
    (address) => {
      expect(checkAddress(address, NONE).allowed).toBe(true);
    },
  );

  it("lets operator CIDRs admit refused unicast ranges, mapped forms included", () => {
    const admitted = new CidrSet(["127.0.0.0/8", "10.20.0.0/16", "fd00::/8"]);
    expect(checkAddress("127.0.0.2", admitted)).toMatchObject({ allowed: true, admittedBy: "operator" });
    expect(checkAddress("::ffff:127.0.0.2", admitted)).toMatchObject({ allowed: true, address: "127.0.0.2" });
    expect(checkAddress("10.20.3.4", admitted).allowed).toBe(true);
    expect(checkAddress("10.21.3.4", admitted)).toMatchObject({ allowed: false, range: "private", admissible: true });
    expect(checkAddress("fd00::5", admitted).allowed).toBe(true);
    expect(checkAddress("169.254.169.254", admitted).allowed).toBe(false);
  });

  it("never admits unspecified, multicast or broadcast addresses, even under 0.0.0.0/0", () => {
    const everything = new CidrSet(["0.0.0.0/0", "::/0"]);
    for (const address of ["0.0.0.0", "::", "224.0.0.1", "ff02::1", "255.255.255.255"]) {
      expect(checkAddress(address, everything)).toMatchObject({ allowed: false, admissible: false });
    }
    expect(checkAddress("10.0.0.1", everything).allowed).toBe(true);
  });
});

describe("host allowlist", () => {
  it("matches exact names case-insensitively and ignores a trailing dot", () => {
    const list = new HostAllowlist(["Agent.Example.com"]);
    expect(list.allows("agent.example.com", 443)).toBe(true);
    expect(list.allows("AGENT.example.com.", 80)).toBe(true);
    expect(list.allows("other.example.com", 443)).toBe(false);
    expect(list.allows("agent.example.com.evil.test", 443)).toBe(false);
  });

  it("matches every subdomain under a wildcard, but not the bare domain or look-alikes", () => {
    const list = new HostAllowlist(["*.example.test"]);
    expect(list.allows("a.example.test", 443)).toBe(true);
    expect(list.allows("a.b.example.test", 443)).toBe(true);
    expect(list.allows("example.test", 443)).toBe(false);
    expect(list.allows("evilexample.test", 443)).toBe(false);
  });

  it("checks the effective port when an entry names one", () => {
    const list = new HostAllowlist(["agent.example:443", "127.0.0.1:8080", "[::1]:9000"]);
    expect(list.allows("agent.example", 443)).toBe(true);
    expect(list.allows("agent.example", 8443)).toBe(false);
    expect(list.allows("127.0.0.1", 8080)).toBe(true);
    expect(list.allows("127.0.0.1", 8081)).toBe(false);
    expect(list.allows("[::1]", 9000)).toBe(true);
    expect(list.allows("[0:0::1]", 9000)).toBe(true);
  });

  it("never lets a wildcard match an IP literal", () => {
    const list = new HostAllowlist(["*.0.0.1"]);
    expect(list.allows("127.0.0.1", 80)).toBe(false);
  });

  it("refuses malformed entries and an empty list allows nothing", () => {
    for (const bad of ["*", "*.com", "http://agent.example", "agent.example:99999", "agent..example", "*.10.0.0.1", "[::1", "a b"]) {
      expect(() => new HostAllowlist([bad]), bad).toThrowError(SwitchyardError);
    }
    expect(new HostAllowlist([]).allows("agent.example", 443)).toBe(false);
  });
});
