/**
 * How deep JSON may nest, checked iteratively. Every JSON value an outsider controls that can become task input or
 * step output (ingest bodies, A2A answers and task snapshots, MCP results) is refused past MAX_JSON_DEPTH: deeper
 * values are never honest, and the recursive walks downstream (protobuf `Value` conversion, CEL, stringify) would
 * overflow the stack on them. Read paths clamp instead of refusing, so whatever is already stored stays readable.
 * The checks are loops with their own stack: they cannot overflow on the input they exist to refuse.
 */

/** Deeper than any honest document; shallow enough that a recursive walk, stringify or clone cannot blow the stack. */
export const MAX_JSON_DEPTH = 64;

/**
 * How deep read paths show stored JSON before clamping: above the intake limit, because a step's output wraps what
 * an agent answered (`{ artifacts: [{ parts: [...] }] }`) and a worker's output is not checked at intake; still
 * shallow enough for the recursive protobuf `Value` conversion.
 */
export const MAX_READ_JSON_DEPTH = 2 * MAX_JSON_DEPTH;

/** What a clamped subtree reads as. */
export const TOO_DEEP_MARKER = "[nested deeper than the readable limit; not shown]";

/** The depth of the first node found past `maxDepth` (1 for a bare object/array), or 0 when the value is within it. */
export function depthBeyond(value: unknown, maxDepth: number = MAX_JSON_DEPTH): number {
  if (typeof value !== "object" || value === null) return 0;
  const stack: Array<[object, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth > maxDepth) return depth;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
  return 0;
}

/**
 * The value with every container deeper than `maxDepth` replaced by TOO_DEEP_MARKER; the same value (no copy) when
 * nothing is that deep, so the common case costs one walk.
 */
export function clampJsonDepth(value: unknown, maxDepth: number = MAX_JSON_DEPTH): unknown {
  if (depthBeyond(value, maxDepth) === 0) return value;
  const root: { v: unknown } = { v: undefined };
  // Each frame copies one container into its already-placed copy; children are queued with where they go.
  const work: Array<{ node: unknown; depth: number; put: (v: unknown) => void }> = [{ node: value, depth: 1, put: (v) => (root.v = v) }];
  while (work.length > 0) {
    const { node, depth, put } = work.pop()!;
    if (typeof node !== "object" || node === null) {
      put(node);
    } else if (depth > maxDepth) {
      put(TOO_DEEP_MARKER);
    } else if (Array.isArray(node)) {
      const copy: unknown[] = new Array(node.length);
      put(copy);
      node.forEach((child, i) => work.push({ node: child, depth: depth + 1, put: (v) => (copy[i] = v) }));
    } else {
      const copy: Record<string, unknown> = {};
      put(copy);
      for (const [key, child] of Object.entries(node)) work.push({ node: child, depth: depth + 1, put: (v) => (copy[key] = v) });
    }
  }
  return root.v;
}
