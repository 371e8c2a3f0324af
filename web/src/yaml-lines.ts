/**
 * Where a validation problem's field path (`steps[2].needs[0]`) is in the submitted text, so the page can show
 * the message at its line. YAML and JSON both parse as YAML; a path that is not in the text has no line.
 */
import { isMap, isSeq, LineCounter, parseDocument, type Node } from "yaml";

export function pathSegments(path: string): (string | number)[] {
  const segments: (string | number)[] = [];
  for (const match of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) segments.push(match[2] !== undefined ? Number(match[2]) : match[1]!);
  return segments;
}

export function lineOfPath(source: string, path: string): number | undefined {
  const lineCounter = new LineCounter();
  const doc = parseDocument(source, { lineCounter });
  let node: unknown = doc.contents;
  let found: Node | undefined = doc.contents ?? undefined;
  for (const segment of pathSegments(path)) {
    if (isMap(node)) {
      const pair = node.items.find((p) => String((p.key as { value?: unknown } | null)?.value ?? p.key) === String(segment));
      if (!pair) break;
      found = (pair.key as Node | null) ?? found;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === "number" && node.items[segment]) {
      node = node.items[segment];
      found = node as Node;
    } else break;
  }
  const offset = found?.range?.[0];
  return offset === undefined ? undefined : lineCounter.linePos(offset).line;
}
