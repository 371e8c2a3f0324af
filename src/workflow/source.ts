/**
 * Decoding a workflow source (YAML or JSON text) into plain data, with syntax errors located by line and column.
 */
import { LineCounter, parseDocument } from "yaml";
import { invalidWorkflow, MAX_SOURCE_CHARS } from "./problems.js";

// ---------------------------------------------------------------------------------------------------------------
// Decoding

export function decodeSource(text: string, format: "yaml" | "json" | undefined): unknown {
  if (text.length > MAX_SOURCE_CHARS) {
    throw invalidWorkflow([{ path: "", reason: `the definition is ${text.length} characters long, more than the limit of ${MAX_SOURCE_CHARS}` }]);
  }
  const asJson = format === "json" || (format === undefined && text.trimStart().startsWith("{"));
  return asJson ? decodeJson(text) : decodeYaml(text);
}

function decodeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message;
    // V8 messages end with the position or quote a slice of the source; neither belongs in a tenant's error.
    const reason = message.replace(/\s*in JSON at position \d+.*$/s, "").replace(/, (\.\.\.)?".*" is not valid JSON$/s, "");
    const offset = jsonErrorOffset(text, message);
    const where = offset === undefined ? "" : ` at ${lineAndColumn(text, offset)}`;
    throw invalidWorkflow([{ path: "", reason: `JSON syntax error${where}: ${reason}` }]);
  }
}

function jsonErrorOffset(text: string, message: string): number | undefined {
  const position = /at position (\d+)/.exec(message);
  if (position) return Number(position[1]);
  if (!message.startsWith("Unexpected token")) return undefined;
  // V8 names the token but not where it is. Prefixes that stop before it fail only for ending early, so the
  // shortest prefix that fails on the token ends right after it.
  const failsOnToken = (prefix: string) => {
    try {
      JSON.parse(prefix);
      return false;
    } catch (error) {
      return (error as Error).message.startsWith("Unexpected token");
    }
  };
  let [low, high] = [1, text.length];
  while (low < high) {
    const mid = (low + high) >> 1;
    if (failsOnToken(text.slice(0, mid))) high = mid;
    else low = mid + 1;
  }
  return low - 1;
}

function decodeYaml(text: string): unknown {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true, lineCounter });
  if (doc.errors.length > 0) {
    throw invalidWorkflow(
      doc.errors.map((e) => {
        const { line, col } = lineCounter.linePos(e.pos[0]);
        return { path: "", reason: `YAML syntax error at line ${line}, column ${col}: ${e.message}` };
      }),
    );
  }
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // Unresolved aliases and alias bombs surface only when the document is turned into values.
    throw invalidWorkflow([{ path: "", reason: `YAML error: ${(error as Error).message}` }]);
  }
}

function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset).split("\n");
  return `line ${before.length}, column ${before[before.length - 1]!.length + 1}`;
}
