/**
 * The console's static files under `/console/`, from the Vite build in `dist/console/`.
 *
 * - `/console` redirects to `/console/`; a path that is not a file answers `index.html` (the app routes in the
 *   browser), except under `assets/`: a missing script is a 404, not HTML that the browser would refuse under
 *   `nosniff` with a confusing message.
 * - Paths are decoded once and must stay inside the directory: `..` segments, backslashes, encoded slashes and NUL
 *   are refused with 400 before anything touches the file system.
 * - `assets/*` (content-hashed names) are cached for a year as immutable; everything else is `no-cache`.
 * - Without a build, 404 `console not built: run npm run build`.
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import path from "node:path";
import { packageLocation } from "../../package-paths.js";
import { CONSOLE_SECURITY_HEADERS, sendConsoleText } from "./console-headers.js";

export const CONSOLE_PREFIX = "/console";

/**
 * Where the console build lives: `dist/console/` of the package, in every layout (the checkout run by tsx, the
 * compiled tree, the CLI bundle, an installed package), found from the package root (package-paths.ts). Looked
 * up when asked, not at import: finding the root reads package.json.
 */
export function defaultConsoleDirs(): string[] {
  const location = packageLocation();
  return location ? [path.join(location.root, "dist", "console")] : [];
}

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".map": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".ico": "image/x-icon",
  ".webp": "image/webp",
  ".woff2": "font/woff2",
  ".woff": "font/woff",
  ".txt": "text/plain; charset=utf-8",
  ".webmanifest": "application/manifest+json",
};

export interface StaticRouteOptions {
  /** Directories tried in order; the first holding an `index.html` serves. @defaultValue `defaultConsoleDirs()` */
  dirs?: readonly string[];
}

/** The console directory in use, or undefined when none is built. Looked up per request: a build may come later. */
export async function findConsoleDir(dirs: readonly string[] = defaultConsoleDirs()): Promise<string | undefined> {
  for (const dir of dirs) {
    const found = await stat(path.join(dir, "index.html")).catch(() => undefined);
    if (found?.isFile()) return dir;
  }
  return undefined;
}

/** The relative file path a request names, or "bad" for one that tries to leave the directory. */
export function consolePathOf(pathname: string): string | "bad" {
  const rest = pathname.slice(CONSOLE_PREFIX.length + 1);
  if (/%2f|%5c|%00/i.test(rest)) return "bad";
  let decoded: string;
  try {
    decoded = decodeURIComponent(rest);
  } catch {
    return "bad";
  }
  if (decoded.includes("\0") || decoded.includes("\\")) return "bad";
  const segments = decoded.split("/");
  if (segments.some((s) => s === ".." || s === ".")) return "bad";
  return segments.filter((s) => s !== "").join("/");
}

export async function serveConsoleStatic(req: IncomingMessage, res: ServerResponse, options: StaticRouteOptions = {}): Promise<void> {
  const pathname = (req.url ?? "/").split("?")[0]!;
  if (req.method !== "GET" && req.method !== "HEAD") {
    return sendConsoleText(res, 405, "the console's files are read with GET\n", { allow: "GET, HEAD" });
  }
  if (pathname === CONSOLE_PREFIX) {
    res.writeHead(308, { ...CONSOLE_SECURITY_HEADERS, location: `${CONSOLE_PREFIX}/`, "content-length": 0 });
    res.end();
    return;
  }
  const relative = consolePathOf(pathname);
  if (relative === "bad") return sendConsoleText(res, 400, "not a console path\n");
  const dir = await findConsoleDir(options.dirs);
  if (!dir) return sendConsoleText(res, 404, "console not built: run npm run build\n");
  let file = relative === "" ? "index.html" : relative;
  let info = await stat(path.join(dir, file)).catch(() => undefined);
  if (!info?.isFile()) {
    // A missing asset is a 404; any other path is a page of the app (names with dots included: `agents/a.b`).
    if (file.startsWith("assets/")) return sendConsoleText(res, 404, `no console file ${file}\n`);
    file = "index.html";
    info = await stat(path.join(dir, file));
  }
  const full = path.join(dir, file);
  // Belt and braces: the segment checks above already keep the path inside the directory.
  if (!full.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep)) return sendConsoleText(res, 400, "not a console path\n");
  const immutable = file.startsWith("assets/");
  res.writeHead(200, {
    ...CONSOLE_SECURITY_HEADERS,
    "content-type": CONTENT_TYPES[path.extname(file).toLowerCase()] ?? "application/octet-stream",
    "content-length": info.size,
    "cache-control": immutable ? "public, max-age=31536000, immutable" : "no-cache",
  });
  if (req.method === "HEAD") {
    res.end();
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const stream = createReadStream(full);
    stream.on("error", reject);
    res.on("close", () => resolve());
    stream.pipe(res);
  });
}
