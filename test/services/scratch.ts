/**
 * Scratch folders and process checks for the local-services tests: a folder the embedded PostgreSQL can reach
 * when the tests run as root (it then runs as `nobody`), and "is any process still using this folder?".
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function scratchDir(label: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), `sy-services-${label}-`));
  chmodSync(path, 0o711);
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** The pids of processes whose command line mentions `text` (e.g. a data folder): what a stop must leave empty. */
export function processesMentioning(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cmdline.includes(text)) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}
