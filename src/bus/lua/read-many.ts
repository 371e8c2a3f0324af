import { defineScript } from "./script.js";

/**
 * read-many-1: a non-blocking XREADGROUP over several streams that takes at most `count` entries in all.
 *
 * Why a script: one XREADGROUP applies COUNT to each stream, so over 64 shard inboxes it could hand a consumer 64
 * times the batch it asked for, and whatever it did not use would sit pending until reclaimed. Here each stream is
 * read with what is left of the count, in one round trip. The first stream read rotates (ARGV[4]) so a busy stream
 * cannot starve the ones after it. On a cluster the keys must share a slot (the caller groups them).
 *
 * KEYS[1..n] stream keys
 * ARGV[1] group, ARGV[2] consumer, ARGV[3] count, ARGV[4] index (0-based) of the stream to read first
 * Returns { read, missing }: `read` in XREADGROUP's shape, { {key, { {id, fields}, ... }}, ... }, for the streams
 * that had entries; `missing` the keys whose group (or stream) does not exist. A missing group does not fail the
 * script: entries already taken from other streams would then be pending with nobody told of them.
 */
export const readManyScript = defineScript(
  "read-many-1",
  "variable",
  `
local remaining = tonumber(ARGV[3])
local first = tonumber(ARGV[4]) % #KEYS
local out = {}
local missing = {}
for step = 0, #KEYS - 1 do
  if remaining <= 0 then break end
  local key = KEYS[(first + step) % #KEYS + 1]
  local reply = redis.pcall('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', remaining, 'STREAMS', key, '>')
  if type(reply) == 'table' and reply.err then
    if string.sub(reply.err, 1, 7) ~= 'NOGROUP' then return reply end
    missing[#missing + 1] = key
  elseif reply and reply[1] then
    local entries = reply[1][2]
    if #entries > 0 then
      out[#out + 1] = { key, entries }
      remaining = remaining - #entries
    end
  end
end
return { out, missing }
`,
);
