/**
 * Field names of stream entries and dead letters, shared by the adapter and the Lua sources so both agree.
 */

/** The one field of a bus entry: the protobuf binary envelope. */
export const ENVELOPE_FIELD = "e";

/** Fields of a dead-letter entry. */
export const DEAD_FIELDS = {
  stream: "stream",
  originalId: "id",
  group: "group",
  reason: "reason",
  deliveries: "deliveries",
  raw: "raw",
  atMs: "at",
} as const;

/**
 * Lua: `field_value(fields, name)` returns the value of `name` in a flat field/value array, or false.
 * `dead_letter(...)` appends the dead-letter entry; callers XACK themselves.
 */
export const LUA_HELPERS = `
local function field_value(fields, name)
  if not fields then return false end
  for i = 1, #fields, 2 do
    if fields[i] == name then return fields[i + 1] end
  end
  return false
end

local function dead_letter(dead_key, stream, id, group, reason, deliveries, raw, at)
  redis.call('XADD', dead_key, '*',
    '${DEAD_FIELDS.stream}', stream, '${DEAD_FIELDS.originalId}', id, '${DEAD_FIELDS.group}', group,
    '${DEAD_FIELDS.reason}', reason, '${DEAD_FIELDS.deliveries}', deliveries, '${DEAD_FIELDS.raw}', raw,
    '${DEAD_FIELDS.atMs}', at)
end
`;
