import { defineScript } from "./script.js";

/**
 * touch-1: resets the idle time of entries this consumer still owns (XCLAIM min-idle 0 JUSTID, which does not
 * count as a delivery).
 *
 * Why the ownership check: a bare XCLAIM with min-idle 0 would take an entry back from the consumer that
 * reclaimed it after this one stalled, and two workers would then run the same step. In a script the check and
 * the claim cannot be separated by another reclaim.
 *
 * KEYS[1] stream key
 * ARGV[1] group, ARGV[2] consumer, ARGV[3..] entry ids
 * Returns the number of entries touched (entries no longer owned, acknowledged, or a missing group count 0).
 */
export const touchScript = defineScript(
  "touch-1",
  1,
  `
local owned = {}
for i = 3, #ARGV do
  local pending = redis.pcall('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if type(pending) == 'table' and not pending.err and #pending > 0 and pending[1][2] == ARGV[2] then
    owned[#owned + 1] = ARGV[i]
  end
end
if #owned == 0 then return 0 end
local args = { 'XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0 }
for _, id in ipairs(owned) do args[#args + 1] = id end
args[#args + 1] = 'JUSTID'
redis.call(unpack(args))
return #owned
`,
);
