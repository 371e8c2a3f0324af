/**
 * The console's build: `web/` is the root, the output goes to dist/console/ (the gateway serves it under /console/).
 * The gateway's Content-Security-Policy allows scripts and styles from 'self' only, so nothing may be inlined: no
 * module-preload polyfill (an inline script in some set-ups) and no assets turned into data: URLs.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const root = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root,
  base: "/console/",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: fileURLToPath(new URL("../dist/console/", import.meta.url)),
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    // dist/ ships in the package: no 1.4 MB of source maps in it.
    sourcemap: false,
    reportCompressedSize: false,
  },
});
