/**
 * The client address behind trusted proxies (gateway/client-address.ts): the rightmost untrusted address of
 * `X-Forwarded-For`, read only when the socket peer is trusted; CIDRs and single addresses, IPv4 and IPv6,
 * IPv4-mapped IPv6, and entries that are not addresses.
 */
import { describe, expect, it } from "vitest";
import { clientAddress, TrustedProxies } from "../../src/gateway/client-address.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";

const INGRESS = new TrustedProxies(["10.1.0.0/16", "192.0.2.10", "fd00:ab::/32"]);

describe("clientAddress", () => {
  it("with no trusted proxies ignores X-Forwarded-For: the socket peer is the client", () => {
    const none = new TrustedProxies();
    expect(clientAddress("10.1.2.3", "203.0.113.5", none)).toBe("10.1.2.3");
    expect(clientAddress("::ffff:10.1.2.3", "203.0.113.5", none)).toBe("10.1.2.3");
    expect(clientAddress("10.1.2.3", undefined, INGRESS)).toBe("10.1.2.3");
  });

  it("ignores the header from an untrusted peer, whatever it says", () => {
    expect(clientAddress("203.0.113.5", "10.1.0.1", INGRESS)).toBe("203.0.113.5");
    expect(clientAddress("203.0.113.5", "198.51.100.1, 10.1.0.1", INGRESS)).toBe("203.0.113.5");
    // Just outside the /16.
    expect(clientAddress("10.2.0.1", "198.51.100.1", INGRESS)).toBe("10.2.0.1");
  });

  it("takes the rightmost untrusted address: what a client writes itself stays to its left, unread", () => {
    expect(clientAddress("10.1.0.7", "198.51.100.1", INGRESS)).toBe("198.51.100.1");
    // Client-forged entries, then the client as the Ingress saw it, then a trusted hop (single address) in between.
    expect(clientAddress("10.1.0.7", "1.1.1.1, 8.8.8.8, 198.51.100.1, 192.0.2.10", INGRESS)).toBe("198.51.100.1");
    // Several headers are one list, in order.
    expect(clientAddress("10.1.0.7", ["1.1.1.1", "198.51.100.1, 10.1.9.9"], INGRESS)).toBe("198.51.100.1");
    expect(clientAddress("10.1.0.7", " 198.51.100.1 ,10.1.0.8 ", INGRESS)).toBe("198.51.100.1");
  });

  it("when every hop is trusted, the client is the leftmost of them", () => {
    expect(clientAddress("10.1.0.7", "10.1.0.9, 192.0.2.10", INGRESS)).toBe("10.1.0.9");
    expect(clientAddress("10.1.0.7", "", INGRESS)).toBe("10.1.0.7");
  });

  it("handles IPv6 proxies and clients, and IPv4-mapped IPv6 on either side", () => {
    expect(clientAddress("fd00:ab:1::7", "2001:db8::1", INGRESS)).toBe("2001:db8::1");
    // Canonical form: one client, one spelling.
    expect(clientAddress("fd00:ab:1::7", "2001:DB8:0:0:0:0:0:1", INGRESS)).toBe("2001:db8::1");
    expect(clientAddress("fd00:ab:1::7", "[2001:db8::1]:51234", INGRESS)).toBe("2001:db8::1");
    expect(clientAddress("fd00:ab:1::7", "2001:db8::1%eth0", INGRESS)).toBe("2001:db8::1");
    // A dual-stack socket reports IPv4 peers mapped; the list (IPv4 CIDRs) still matches them, and mapped clients unwrap.
    expect(clientAddress("::ffff:10.1.0.7", "198.51.100.1", INGRESS)).toBe("198.51.100.1");
    expect(clientAddress("::ffff:10.1.0.7", "::ffff:198.51.100.1, ::ffff:10.1.0.8", INGRESS)).toBe("198.51.100.1");
    // A mapped address in the list matches the plain IPv4 peer.
    expect(clientAddress("10.9.0.1", "198.51.100.1", new TrustedProxies(["::ffff:10.9.0.0/112"]))).toBe("198.51.100.1");
    // Outside fd00:ab::/32.
    expect(clientAddress("fd00:ac::1", "2001:db8::1", INGRESS)).toBe("fd00:ac::1");
  });

  it("drops a port some proxies append", () => {
    expect(clientAddress("10.1.0.7", "198.51.100.1:40211", INGRESS)).toBe("198.51.100.1");
    expect(clientAddress("10.1.0.7", "198.51.100.1:40211, 10.1.0.8:443", INGRESS)).toBe("198.51.100.1");
  });

  it("stops at an entry that is not an address: the last trusted hop reached is the client", () => {
    for (const junk of ["unknown", "example.com", "999.1.1.1", "1.2.3", "<script>", "198.51.100.1:http", "_hidden"]) {
      expect(clientAddress("10.1.0.7", `198.51.100.1, ${junk}`, INGRESS), junk).toBe("10.1.0.7");
      expect(clientAddress("10.1.0.7", `198.51.100.1, ${junk}, 10.1.0.8`, INGRESS), junk).toBe("10.1.0.8");
    }
    // An empty item is no address either; an untrusted address right of the junk is still the client.
    expect(clientAddress("10.1.0.7", "198.51.100.1,, 10.1.0.8", INGRESS)).toBe("10.1.0.8");
    expect(clientAddress("10.1.0.7", "garbage, 203.0.113.9", INGRESS)).toBe("203.0.113.9");
  });

  it("passes a socket address that is no IP through (there is nothing to normalise)", () => {
    expect(clientAddress(undefined, "198.51.100.1", INGRESS)).toBe("unknown");
    expect(clientAddress("weird", "198.51.100.1", INGRESS)).toBe("weird");
  });
});

describe("TrustedProxies", () => {
  it("takes addresses and CIDRs of both families, and refuses a bad entry with CONFIG", () => {
    const list = new TrustedProxies(["10.0.0.0/8", "192.0.2.1", "::1", "fd00::/8"]);
    expect(list.size).toBe(4);
    for (const inside of ["10.255.0.1", "192.0.2.1", "::1", "fd12::9", "::ffff:10.0.0.1"]) expect(list.contains(inside), inside).toBe(true);
    for (const outside of ["11.0.0.1", "192.0.2.2", "::2", "fe80::1", "not-an-ip"]) expect(list.contains(outside), outside).toBe(false);
    for (const bad of ["10.0.0.0/33", "proxy.internal", "fd00::/129"]) {
      let error: unknown;
      try {
        new TrustedProxies([bad]);
      } catch (caught) {
        error = caught;
      }
      expect(error, bad).toBeInstanceOf(SwitchyardError);
      expect((error as SwitchyardError).code).toBe(ErrorCode.Config);
    }
  });
});
