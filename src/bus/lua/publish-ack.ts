import { ENVELOPE_FIELD } from "./fields.js";
import { defineScript, type LuaScript } from "./script.js";

/**
 * publish-ack-1: appends envelopes, then acknowledges entries of another stream — in one round trip, and the
 * acknowledgement only if every append succeeded. A plain pipeline (or MULTI/EXEC) would not do: Redis runs the
 * XACK after a failed XADD (WRONGTYPE, OOM inside a script, …), and a worker's entry would be acknowledged
 * with its outcome lost. Here the first failing `redis.call` ends the script before the XACK.
 *
 * KEYS[1..n] the streams to append to, KEYS[n+1] the stream to acknowledge on
 * ARGV[1] n, ARGV[2..n+1] the envelopes (binary), ARGV[n+2] group, ARGV[n+3..] entry ids
 * Returns the number of entries acknowledged, -1 when the group is gone (nothing to acknowledge), or the error
 * text when the XACK failed otherwise; either way the appends stand.
 *
 * Touches several slots: callers on a Redis Cluster use it only when every key shares one hash tag.
 */
export function publishAckScript(keyCount: number): LuaScript {
  // One source and SHA; `runScript` checks the key count per definition, so there is one per count in use.
  let script = byKeyCount.get(keyCount);
  if (!script) byKeyCount.set(keyCount, (script = defineScript("publish-ack-1", keyCount, PUBLISH_ACK_SOURCE)));
  return script;
}

const byKeyCount = new Map<number, LuaScript>();

const PUBLISH_ACK_SOURCE = `
local n = tonumber(ARGV[1])
for i = 1, n do
  redis.call('XADD', KEYS[i], '*', '${ENVELOPE_FIELD}', ARGV[i + 1])
end
local ack = { 'XACK', KEYS[n + 1], ARGV[n + 2] }
for i = n + 3, #ARGV do ack[#ack + 1] = ARGV[i] end
local acked = redis.pcall(unpack(ack))
if type(acked) == 'table' and acked.err then
  if string.sub(acked.err, 1, 7) == 'NOGROUP' then return -1 end
  return acked.err
end
return acked
`;
