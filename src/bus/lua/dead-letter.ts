import { LUA_HELPERS } from "./fields.js";
import { defineScript } from "./script.js";

/**
 * dead-letter-2: moves one pending entry to the dead-letter stream and acknowledges it, atomically, so a crash
 * cannot leave a dead letter whose entry is redelivered (or an acked entry with no dead letter).
 *
 * KEYS[1] stream key, KEYS[2] dead-letter key
 * ARGV[1] group, ARGV[2] entry id, ARGV[3] logical stream name, ARGV[4] reason, ARGV[5] raw bytes, ARGV[6] now (ms)
 * Returns 1 when moved; 0 when the entry is not pending in the group (already acknowledged, or the group is gone),
 * which makes repeating the call harmless.
 */
export const deadLetterScript = defineScript(
  "dead-letter-2",
  2,
  `${LUA_HELPERS}
local pending = redis.pcall('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if type(pending) ~= 'table' or pending.err or #pending == 0 then return 0 end
dead_letter(KEYS[2], ARGV[3], ARGV[2], ARGV[1], ARGV[4], pending[1][4], ARGV[5], ARGV[6])
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
return 1
`,
);
