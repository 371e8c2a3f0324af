/**
 * `npm run docs:config`: rewrites the configuration tables of README.md and deploy/README.md from the schema
 * (src/config/variables-*.ts). CI runs it and fails when the tree changed; test/config/table.test.ts checks the same.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { CONFIG_TABLE_FILES, rewriteConfigTables } from "../src/config/table.js";

const root = resolve(import.meta.dirname, "..");
for (const { path, linkBase } of CONFIG_TABLE_FILES) {
  const file = resolve(root, path);
  const before = readFileSync(file, "utf8");
  const after = rewriteConfigTables(before, linkBase);
  if (after === before) {
    console.log(`${path}: up to date`);
  } else {
    writeFileSync(file, after);
    console.log(`${path}: tables rewritten`);
  }
}
