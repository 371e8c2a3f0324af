/**
 * The package's version, for `switchyard --version`: read once from the package.json that ships with this code
 * (src/package-paths.ts finds it from the checkout, the build, the bundle and an installed package alike).
 */
import { packageLocation } from "../package-paths.js";

export function packageVersion(): string {
  // Only a copy of the code without its package.json gets here; say so rather than invent a number.
  return packageLocation()?.version ?? "unknown (no switchyard package.json above the CLI)";
}
