/** The one iterative depth check (src/json-depth.ts): it must not overflow on the input it exists to refuse. */
import { describe, expect, it } from "vitest";
import { clampJsonDepth, depthBeyond, MAX_JSON_DEPTH, TOO_DEEP_MARKER } from "../src/json-depth.js";

function nested(depth: number, leaf: unknown = 1): unknown {
  let value: unknown = leaf;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { d: value } : [value];
  return value;
}

describe("json depth", () => {
  it("answers 0 within the limit and the depth reached past it, even 200,000 levels down", () => {
    expect(depthBeyond(nested(MAX_JSON_DEPTH))).toBe(0);
    expect(depthBeyond(nested(MAX_JSON_DEPTH + 1))).toBe(MAX_JSON_DEPTH + 1);
    expect(depthBeyond(nested(200_000))).toBe(MAX_JSON_DEPTH + 1);
    expect(depthBeyond("text")).toBe(0);
    expect(depthBeyond(null)).toBe(0);
  });

  it("clamps only what is too deep, keeping the rest; the same value when nothing is", () => {
    const shallow = { a: [1, { b: 2 }] };
    expect(clampJsonDepth(shallow)).toBe(shallow);
    const value = { keep: "me", deep: nested(200_000) };
    const clamped = clampJsonDepth(value, 4) as { keep: string; deep: unknown };
    expect(clamped.keep).toBe("me");
    expect(clamped.deep).toEqual([{ d: [TOO_DEEP_MARKER] }]);
    expect(depthBeyond(clamped, 4)).toBe(0);
    expect(() => JSON.stringify(clampJsonDepth(nested(200_000)))).not.toThrow();
  });
});
