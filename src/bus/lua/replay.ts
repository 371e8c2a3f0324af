import { DEAD_FIELDS, ENVELOPE_FIELD, LUA_HELPERS } from "./fields.js";
import { defineScript } from "./script.js";

/**
 * replay-2: re-adds dead letters' raw bytes to their stream and deletes the dead letters, atomically per call, so
 * two operators replaying the same ids publish each entry once.
 *
 * KEYS[1] stream key, KEYS[2] dead-letter key
 * ARGV[1..] dead-letter entry ids
 * Returns the number replayed (unknown ids are skipped).
 */
export const replayScript = defineScript(
  "replay-2",
  2,
  `${LUA_HELPERS}
local replayed = 0
for i = 1, #ARGV do
  local found = redis.call('XRANGE', KEYS[2], ARGV[i], ARGV[i])
  if #found > 0 then
    local raw = field_value(found[1][2], '${DEAD_FIELDS.raw}')
    if raw then
      redis.call('XADD', KEYS[1], '*', '${ENVELOPE_FIELD}', raw)
      redis.call('XDEL', KEYS[2], ARGV[i])
      replayed = replayed + 1
    end
  end
end
return replayed
`,
);
