import { ENVELOPE_FIELD, LUA_HELPERS } from "./fields.js";
import { defineScript } from "./script.js";

/**
 * reclaim-2: one XAUTOCLAIM step plus the delivery-count check, atomically.
 *
 * Why a script rather than XPENDING + XAUTOCLAIM from the client: the delivery count must be read after the claim
 * (XAUTOCLAIM increments it) and before anyone else can act on the entry; in a script nothing interleaves, so an
 * entry over the limit is dead-lettered exactly once even with several reclaimers.
 *
 * KEYS[1] stream key, KEYS[2] dead-letter key
 * ARGV[1] group, ARGV[2] consumer, ARGV[3] min idle (ms), ARGV[4] cursor, ARGV[5] count, ARGV[6] max deliveries,
 * ARGV[7] logical stream name, ARGV[8] now (ms)
 * Returns { next cursor, { {id, fields}, ... } claimed and within the limit, dead-lettered count, deleted count }.
 * Entries deleted from the stream while pending (reported by XAUTOCLAIM on Redis 7, returned with nil fields on
 * 6.2) are dropped from the PEL and not returned.
 */
export const reclaimScript = defineScript(
  "reclaim-2",
  2,
  `${LUA_HELPERS}
local res = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', ARGV[5])
local max_deliveries = tonumber(ARGV[6])
local kept = {}
local dead = 0
local deleted = 0
if res[3] then deleted = #res[3] end
for _, entry in ipairs(res[2]) do
  if not entry or not entry[2] then
    -- Redis 6.2 shape for an entry deleted while pending.
    if entry and entry[1] then redis.call('XACK', KEYS[1], ARGV[1], entry[1]) end
    deleted = deleted + 1
  else
    local id = entry[1]
    local pending = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1)
    local deliveries = 0
    if #pending > 0 then deliveries = pending[1][4] end
    if deliveries > max_deliveries then
      local raw = field_value(entry[2], '${ENVELOPE_FIELD}') or ''
      dead_letter(KEYS[2], ARGV[7], id, ARGV[1], 'max deliveries exceeded (' .. deliveries .. ')', deliveries, raw, ARGV[8])
      redis.call('XACK', KEYS[1], ARGV[1], id)
      dead = dead + 1
    else
      kept[#kept + 1] = entry
    end
  end
end
return { res[1], kept, dead, deleted }
`,
);
