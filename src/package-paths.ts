/**
 * Where the files that ship beside the code are (migrations, example workflows and handlers, package.json), found
 * from the package root rather than by a fixed `../..` from this module: the same code runs from three layouts —
 * the TypeScript source (src/…, through tsx), the compiled tree (dist/src/…) and the CLI bundle (dist/bundle/…,
 * where a module's code lands in a chunk at a depth of its own) — and in an installed package
 * (node_modules/switchyard/dist/…). Compiled code reads the copies under dist/ that scripts/build.mjs makes,
 * because an installed package ships dist/ and not the checkout's top-level folders.
 */
import { readFileSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE_NAME = "switchyard";

export interface PackageLocation {
  /** The directory holding switchyard's package.json. */
  root: string;
  version: string;
  /** Whether this code runs compiled (from dist/): assets are then read from `<root>/dist/`. */
  compiled: boolean;
}

let cached: PackageLocation | null | undefined;

/** The package this module belongs to; undefined only for a copy of the code without its package.json. */
export function packageLocation(): PackageLocation | undefined {
  if (cached === undefined) cached = locate(fileURLToPath(import.meta.url)) ?? null;
  return cached ?? undefined;
}

/**
 * An asset path given relative to the repository root (`migrations/`, `examples/workflows/demo.yaml`), resolved
 * for the layout this code runs from. Throws when the package cannot be found: every caller needs the file.
 */
export function assetPath(relative: string): string {
  const location = packageLocation();
  if (!location) throw new Error(`switchyard cannot find its package.json above ${fileURLToPath(import.meta.url)} to locate ${relative}`);
  return location.compiled ? join(location.root, "dist", relative) : join(location.root, relative);
}

function locate(modulePath: string): PackageLocation | undefined {
  for (let dir = dirname(modulePath); ; dir = dirname(dir)) {
    const manifest = readManifest(join(dir, "package.json"));
    if (manifest?.name === PACKAGE_NAME && typeof manifest.version === "string") {
      return { root: dir, version: manifest.version, compiled: modulePath.startsWith(join(dir, "dist") + sep) };
    }
    if (dirname(dir) === dir) return undefined;
  }
}

function readManifest(path: string): { name?: unknown; version?: unknown } | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as { name?: unknown; version?: unknown };
  } catch {
    return undefined;
  }
}
