import { defineScript } from "./script.js";

/**
 * trim-1: trims a stream towards MAXLEN without removing anything a consumer group still needs.
 *
 * The floor is the smallest, over every group, of its oldest pending id and the first entry after its
 * last-delivered-id (never delivered yet). Only entries that are both older than the last `maxLen` and below the
 * floor are removed. Both sets are prefixes of the stream, so their intersection is the shorter prefix:
 * XRANGE - (floor COUNT excess tells which one it is, and the exact XTRIM for that prefix follows. Done in a
 * script so no group can move (or be created) between computing the floor and trimming.
 *
 * KEYS[1] stream key
 * ARGV[1] maxLen
 * Returns the number of entries removed.
 */
export const trimScript = defineScript(
  "trim-1",
  1,
  `
local max_len = tonumber(ARGV[1])
local excess = redis.call('XLEN', KEYS[1]) - max_len
if excess <= 0 then return 0 end

local function parse_id(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local floor = nil
local floor_ms, floor_seq
local function lower_floor(id)
  local ms, seq = parse_id(id)
  if floor == nil or ms < floor_ms or (ms == floor_ms and seq < floor_seq) then
    floor, floor_ms, floor_seq = id, ms, seq
  end
end

local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
for _, info in ipairs(groups) do
  local name, last_delivered
  for i = 1, #info, 2 do
    if info[i] == 'name' then name = info[i + 1] end
    if info[i] == 'last-delivered-id' then last_delivered = info[i + 1] end
  end
  local summary = redis.call('XPENDING', KEYS[1], name)
  if summary[1] > 0 then lower_floor(summary[2]) end
  local undelivered = redis.call('XRANGE', KEYS[1], '(' .. last_delivered, '+', 'COUNT', 1)
  if #undelivered > 0 then lower_floor(undelivered[1][1]) end
end

if floor == nil then return redis.call('XTRIM', KEYS[1], 'MAXLEN', '=', max_len) end
local removable = redis.call('XRANGE', KEYS[1], '-', '(' .. floor, 'COUNT', excess)
if #removable == 0 then return 0 end
if #removable < excess then return redis.call('XTRIM', KEYS[1], 'MINID', '=', floor) end
return redis.call('XTRIM', KEYS[1], 'MAXLEN', '=', max_len)
`,
);
