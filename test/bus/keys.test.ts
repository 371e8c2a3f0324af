import { describe, expect, it } from "vitest";
import { consumerName, deadLetterKey, hashTagOf, streamKey } from "../../src/bus/keys.js";
import { ErrorCode } from "../../src/errors.js";

/** The part of a key Redis Cluster hashes: the first non-empty `{...}`. */
function hashTag(key: string): string {
  const open = key.indexOf("{");
  const close = key.indexOf("}", open + 1);
  return open >= 0 && close > open + 1 ? key.slice(open + 1, close) : key;
}

describe("stream keys", () => {
  it.each(["role:writer", "team:ops", "coordinator", "foreign:acme-agent.v2"])("maps %s into a hash tag shared with its dead-letter stream", (stream) => {
    expect(streamKey("sy:", stream)).toBe(`sy:{${stream}}`);
    expect(deadLetterKey("sy:", stream)).toBe(`sy:{${stream}}:dead`);
    expect(hashTag(streamKey("sy:", stream))).toBe(stream);
    expect(hashTag(deadLetterKey("sy:", stream))).toBe(stream);
  });

  it.each(["", "Role:writer", "role:", "role:{x}", "role:a b", "role:writer:extra", ":writer", "x".repeat(40)])("rejects %j", (stream) => {
    expect(() => streamKey("sy:", stream)).toThrowError(expect.objectContaining({ code: ErrorCode.InvalidArgument, message: expect.stringContaining("stream name") }));
  });

  it("rejects a prefix with braces", () => {
    expect(() => streamKey("sy:{a}:", "role:writer")).toThrowError(expect.objectContaining({ code: ErrorCode.InvalidArgument }));
  });
});

describe("hashTagOf", () => {
  it("is the stream's tag for every key of the stream, and tells two streams apart", () => {
    expect(hashTagOf(streamKey("sy:", "role:writer"))).toBe("role:writer");
    expect(hashTagOf(deadLetterKey("sy:", "role:writer"))).toBe("role:writer");
    expect(hashTagOf(streamKey("sy:", "coordinator"))).not.toBe(hashTagOf(streamKey("sy:", "role:writer")));
  });

  it("is the whole key when there is no tag or an empty one (what Redis hashes then)", () => {
    expect(hashTagOf("plain")).toBe("plain");
    expect(hashTagOf("a{}b")).toBe("a{}b");
    expect(hashTagOf("a{b")).toBe("a{b");
  });
});

describe("consumerName", () => {
  it("is host-pid-random and unique per call", () => {
    const a = consumerName("writer");
    const b = consumerName("writer");
    expect(a).toMatch(new RegExp(`^[A-Za-z0-9_.-]+-${process.pid}-[0-9a-f]{8}$`));
    expect(a).not.toBe(b);
  });

  it("requires a role", () => {
    expect(() => consumerName("")).toThrowError(expect.objectContaining({ code: ErrorCode.InvalidArgument }));
  });
});
