/**
 * The package's version, for `switchyard --version`: read once from the package.json that ships with this code.
 * Found by walking up from this file, because the file sits at a different depth in the checkout (src/cli/), the
 * build (dist/src/cli/) and an installed package (node_modules/switchyard/dist/src/cli/).
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE_NAME = "switchyard";

let cached: string | undefined;

export function packageVersion(): string {
  cached ??= readVersion(dirname(fileURLToPath(import.meta.url)));
  return cached;
}

function readVersion(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = readManifest(join(dir, "package.json"));
    if (manifest?.name === PACKAGE_NAME && typeof manifest.version === "string") return manifest.version;
    if (dirname(dir) === dir) break;
  }
  // Only a copy of the code without its package.json gets here; say so rather than invent a number.
  return "unknown (no switchyard package.json above the CLI)";
}

function readManifest(path: string): { name?: unknown; version?: unknown } | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as { name?: unknown; version?: unknown };
  } catch {
    return undefined;
  }
}
