/**
 * send-fields.ts: what of a step input may leave, and the hash of exactly that.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { canonicalJson, sendableInput, sentHash } from "../../../src/foreign/send-fields.js";

describe("sendableInput", () => {
  it("sends the whole input when no fields are listed", () => {
    expect(sendableInput({ a: 1, b: 2 }, null)).toEqual({ ok: true, request: { a: 1, b: 2 } });
    expect(sendableInput("text", null)).toEqual({ ok: true, request: "text" });
  });

  it("keeps only the listed top-level fields; a listed field that is absent stays absent", () => {
    expect(sendableInput({ city: "Oslo", ssn: "123", note: "x" }, ["city", "zip"])).toEqual({ ok: true, request: { city: "Oslo" } });
    expect(sendableInput({ ssn: "123" }, ["city"])).toEqual({ ok: true, request: {} });
  });

  it("follows dotted paths into nested objects and rebuilds them in place", () => {
    const input = { task: { city: "Oslo", ssn: "123" }, steps: { a: { secret: 1 } } };
    expect(sendableInput(input, ["task.city"])).toEqual({ ok: true, request: { task: { city: "Oslo" } } });
    expect(sendableInput(input, ["task.city", "task"])).toEqual({ ok: true, request: { task: { city: "Oslo", ssn: "123" } } });
    expect(sendableInput(input, ["task", "task.city"])).toEqual({ ok: true, request: { task: { city: "Oslo", ssn: "123" } } });
    expect(sendableInput(input, ["task.city.name", "steps.b"])).toEqual({ ok: true, request: {} });
    // Nothing is mutated.
    expect(input).toEqual({ task: { city: "Oslo", ssn: "123" }, steps: { a: { secret: 1 } } });
  });

  it("never reaches inherited properties", () => {
    expect(sendableInput({ a: 1 }, ["constructor", "__proto__", "toString"])).toEqual({ ok: true, request: {} });
  });

  it("refuses an input that is not an object when fields are listed", () => {
    for (const input of ["text", 3, null, [1, 2], true]) {
      const result = sendableInput(input, ["city"]);
      expect(result.ok).toBe(false);
      expect(!result.ok && result.reason).toMatch(/not an object/);
    }
  });
});

describe("canonicalJson and sentHash", () => {
  it("sorts keys at every level and keeps array order", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson({ a: undefined, b: "x" })).toBe('{"b":"x"}');
    expect(canonicalJson("é\n")).toBe(JSON.stringify("é\n"));
  });

  it("hashes the canonical text with sha256", () => {
    const hex = createHash("sha256").update('{"city":"Oslo"}').digest("hex");
    expect(sentHash({ city: "Oslo" })).toBe(hex);
    expect(sentHash({ b: 1, a: 2 })).toBe(sentHash({ a: 2, b: 1 }));
  });
});
