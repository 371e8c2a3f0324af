/** The idempotency key of a reply whose caller gave none: the same words on the same task are one reply. */
import { hash } from "node:crypto";

export function defaultReplyKey(taskId: string, text: string): string {
  return hash("sha256", `${taskId}\u0000${text}`, "hex");
}

/** Longest idempotency key a caller may give. */
export const MAX_REPLY_KEY_CHARS = 256;
