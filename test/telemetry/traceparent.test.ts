/**
 * `traceparent` values come from the bus, database rows and HTTP headers: untrusted text. A malformed one is no
 * parent (the span starts a new trace), never an error that would fail a hop or a turn.
 */
import { describe, expect, it } from "vitest";
import { ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { formatTraceparent, parentContext, parseTraceparent } from "../../src/telemetry/traceparent.js";

const VALID = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

describe("traceparent", () => {
  it("parses a valid value and formats it back", () => {
    const parsed = parseTraceparent(VALID)!;
    expect(parsed).toMatchObject({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1, isRemote: true });
    expect(formatTraceparent(parsed)).toBe(VALID);
    expect(formatTraceparent(parseTraceparent(VALID.replace(/01$/, "00"))!)).toBe(VALID.replace(/01$/, "00"));
    // Upper case and surrounding space are tolerated; a future version may carry more fields.
    expect(parseTraceparent(` ${VALID.toUpperCase()} `)?.spanId).toBe("b7ad6b7169203331");
    expect(parseTraceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra")?.spanId).toBe("b7ad6b7169203331");
  });

  it.each([
    ["empty", ""],
    ["null", null],
    ["garbage", "not a traceparent"],
    ["version ff", "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"],
    ["version 00 with extra fields", `${VALID}-extra`],
    ["all-zero trace id", "00-00000000000000000000000000000000-b7ad6b7169203331-01"],
    ["all-zero span id", "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"],
    ["short trace id", "00-0af7651916cd43dd8448eb211c8031-b7ad6b7169203331-01"],
    ["non-hex", "00-0af7651916cd43dd8448eb211c80319z-b7ad6b7169203331-01"],
  ])("reads %s as no parent", (_name, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });

  it("takes the first valid candidate as the parent, and the active context when none is", () => {
    const context = parentContext("garbage", undefined, VALID);
    expect(trace.getSpanContext(context)?.spanId).toBe("b7ad6b7169203331");
    expect(trace.getSpanContext(parentContext("garbage", null))).toBeUndefined();
    expect(parentContext()).toBe(ROOT_CONTEXT);
  });
});
