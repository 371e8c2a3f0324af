/**
 * The address policy against every special-purpose range it must refuse, and against every IPv6 form that carries an
 * IPv4 address (IPv4-mapped, SIIT, NAT64, IPv4-compatible, 6to4): a wrapped address is judged, and admitted by the
 * operator's allowlist, exactly like the IPv4 address it carries.
 */
import { describe, expect, it } from "vitest";
import { checkAddress } from "../../../src/foreign/egress/address-policy.js";
import { CidrSet } from "../../../src/foreign/egress/cidr.js";

const NONE = new CidrSet([]);
const EVERYTHING = new CidrSet(["0.0.0.0/0", "::/0"]);

/** [IPv4 address, the range that refuses it, a CIDR an operator may name to admit it (none: never admissible)] */
const IPV4_SAMPLES: ReadonlyArray<readonly [string, string, string | undefined]> = [
  ["0.0.0.0", "unspecified", undefined],
  ["0.1.2.3", "reserved", "0.0.0.0/8"],
  ["10.0.0.1", "private", "10.0.0.0/8"],
  ["172.16.5.4", "private", "172.16.0.0/12"],
  ["192.168.1.1", "private", "192.168.0.0/16"],
  ["127.0.0.1", "loopback", "127.0.0.0/8"],
  ["169.254.169.254", "metadata", "169.254.169.254/32"],
  ["169.254.1.1", "link-local", "169.254.0.0/16"],
  ["100.64.0.1", "cgnat", "100.64.0.0/10"],
  ["192.0.0.8", "reserved", "192.0.0.0/24"],
  ["192.0.2.1", "reserved", "192.0.2.0/24"],
  ["192.88.99.1", "reserved", "192.88.99.0/24"],
  ["198.18.0.1", "reserved", "198.18.0.0/15"],
  ["198.19.255.254", "reserved", "198.18.0.0/15"],
  ["198.51.100.1", "reserved", "198.51.100.0/24"],
  ["203.0.113.1", "reserved", "203.0.113.0/24"],
  ["240.0.0.1", "reserved", "240.0.0.0/4"],
  ["224.0.0.1", "multicast", undefined],
  ["239.255.255.250", "multicast", undefined],
  ["255.255.255.255", "broadcast", undefined],
];

const PUBLIC_IPV4 = ["8.8.8.8", "93.184.215.14", "172.32.0.1", "100.128.0.1", "198.20.0.1", "223.255.255.254"];

function sixToFour(ipv4: string): string {
  const [a, b, c, d] = ipv4.split(".").map(Number) as [number, number, number, number];
  return `2002:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}::1`;
}

/** [name, how it wraps an IPv4 address, the `embeddedIn` a refusal names (none: the address is rewritten to IPv4)] */
const WRAPPERS: ReadonlyArray<readonly [string, (ipv4: string) => string, string | undefined]> = [
  ["plain IPv4", (v4) => v4, undefined],
  ["IPv4-mapped", (v4) => `::ffff:${v4}`, undefined],
  ["IPv4-translated (SIIT)", (v4) => `::ffff:0:${v4}`, "IPv4-translated IPv6"],
  ["NAT64 well-known prefix", (v4) => `64:ff9b::${v4}`, "NAT64"],
  ["IPv4-compatible", (v4) => `::${v4}`, "IPv4-compatible IPv6"],
  ["6to4", sixToFour, "6to4"],
];

describe.each(WRAPPERS)("an IPv4 address wrapped as %s", (_name, wrap, embeddedIn) => {
  // `::0.0.0.0` is `::` itself, refused as unspecified by its own name rather than as a wrapper.
  const samples = IPV4_SAMPLES.filter(([v4]) => !(embeddedIn === "IPv4-compatible IPv6" && v4 === "0.0.0.0"));

  it.each(samples)("refuses %s as %s without an operator allowlist", (v4, range, admit) => {
    const verdict = checkAddress(wrap(v4), NONE);
    expect(verdict).toMatchObject({ allowed: false, range, admissible: admit !== undefined });
    if (embeddedIn === undefined) expect(verdict).toMatchObject({ address: v4, family: 4 });
    else expect(verdict).toMatchObject({ family: 6, embeddedIn, embeddedAddress: v4 });
  });

  it.each(samples.filter(([, , admit]) => admit !== undefined))("admits %s (%s) when the allowlist names %s", (v4, _range, admit) => {
    const address = wrap(v4);
    const verdict = checkAddress(address, new CidrSet([admit!]));
    expect(verdict).toMatchObject({ allowed: true, admittedBy: "operator" });
    // The verdict keeps what the socket will connect to: the IPv6 spelling, unless the form is IPv4-mapped.
    expect(verdict.family).toBe(embeddedIn === undefined ? 4 : 6);
  });

  it("is not admitted by an allowlist naming some other range", () => {
    const admitted = new CidrSet(["10.0.0.0/8", "fd00::/8"]);
    expect(checkAddress(wrap("127.0.0.1"), admitted)).toMatchObject({ allowed: false, range: "loopback", admissible: true });
    expect(checkAddress(wrap("172.16.0.1"), admitted)).toMatchObject({ allowed: false, range: "private", admissible: true });
    expect(checkAddress(wrap("10.0.0.1"), admitted)).toMatchObject({ allowed: true, admittedBy: "operator" });
  });

  it.each(samples.filter(([, , admit]) => admit === undefined))("never admits %s (%s), even under 0.0.0.0/0 and ::/0", (v4) => {
    expect(checkAddress(wrap(v4), EVERYTHING)).toMatchObject({ allowed: false, admissible: false });
    expect(checkAddress(wrap(v4), new CidrSet([v4, wrap(v4)]))).toMatchObject({ allowed: false, admissible: false });
  });

  it.each(PUBLIC_IPV4)("allows public %s", (v4) => {
    expect(checkAddress(wrap(v4), NONE)).toMatchObject({ allowed: true });
  });
});

describe("IPv6 special-purpose ranges", () => {
  // [address, range, a CIDR an operator may name to admit it (none: never admissible)]
  it.each([
    ["::", "unspecified", undefined],
    ["::1", "loopback", "::1/128"],
    ["fc00::1", "private", "fc00::/7"],
    ["fdff:ffff::1", "private", "fd00::/8"],
    ["64:ff9b:1::1", "private", "64:ff9b:1::/48"],
    ["64:ff9b:1:ffff::808:808", "private", "64:ff9b:1::/48"],
    ["fe80::1", "link-local", "fe80::/10"],
    ["febf:ffff::1", "link-local", "fe80::/10"],
    ["ff02::1", "multicast", undefined],
    ["ff0e::fb", "multicast", undefined],
    ["100::1", "reserved", "100::/64"],
    ["2001::1", "reserved", "2001::/32"],
    ["2001:1::1", "reserved", "2001::/23"],
    ["2001:2::1", "reserved", "2001:2::/48"],
    ["2001:2:0:ffff::1", "reserved", "2001:2::/48"],
    ["2001:10::1", "reserved", "2001:10::/28"],
    ["2001:1f:ffff::1", "reserved", "2001:10::/28"],
    ["2001:20::1", "reserved", "2001:20::/28"],
    ["2001:2f:ffff::1", "reserved", "2001:20::/28"],
    ["2001:1ff:ffff::1", "reserved", "2001::/23"],
    ["2001:db8::1", "reserved", "2001:db8::/32"],
    ["3fff::1", "reserved", "3fff::/20"],
    ["fec0::1", "reserved", "fec0::/10"],
    ["feff::1", "reserved", "fec0::/10"],
    // Outside 2000::/3, the only space IANA allocates for global unicast.
    ["5f00::1", "reserved", "5f00::/16"],
    ["100:0:0:1::1", "reserved", "100:0:0:1::/64"],
    ["4000::1", "reserved", "4000::/2"],
    ["::2:0:0:1", "reserved", "::/8"],
  ] as const)("refuses %s as %s unless the allowlist names %s", (address, range, admit) => {
    expect(checkAddress(address, NONE)).toMatchObject({ allowed: false, range, admissible: admit !== undefined });
    if (admit === undefined) {
      expect(checkAddress(address, EVERYTHING)).toMatchObject({ allowed: false, admissible: false });
    } else {
      expect(checkAddress(address, new CidrSet([admit]))).toMatchObject({ allowed: true, admittedBy: "operator" });
    }
  });

  it.each(["2001:200::1", "2001:4860:4860::8888", "2606:4700::1111", "2a00:1450:4001::200e", "2c0f:ff00::1"])(
    "allows public unicast %s",
    (address) => {
      expect(checkAddress(address, NONE)).toMatchObject({ allowed: true, family: 6 });
    },
  );

  it("admits a whole translation prefix when the operator names it, but never what it carries to multicast", () => {
    const nat64 = new CidrSet(["64:ff9b::/96", "::ffff:0:0:0/96"]);
    expect(checkAddress("64:ff9b::10.1.2.3", nat64)).toMatchObject({ allowed: true, admittedBy: "operator" });
    expect(checkAddress("::ffff:0:127.0.0.1", nat64)).toMatchObject({ allowed: true, admittedBy: "operator" });
    expect(checkAddress("64:ff9b::224.0.0.1", nat64)).toMatchObject({ allowed: false, range: "multicast", admissible: false });
    expect(checkAddress("::ffff:0:0.0.0.0", nat64)).toMatchObject({ allowed: false, range: "unspecified", admissible: false });
  });
});
