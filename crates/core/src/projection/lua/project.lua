-- Applies one outbox row to a board's projection. Sent after prelude.lua, members.lua and
-- place.lua (scripts.rs), which give it its `#!lua` line (Redis refuses the whole call with OOM
-- before it runs when memory is full, so no call ever writes half), `wrong_type`,
-- `parse_stored` and `place_member`.
--
-- KEYS[1] event marker     (string, with a TTL)
-- KEYS[2] board scores     (sorted set: member = user id, or tie key and user id; member.rs)
-- KEYS[3] board versions   (hash: user id -> '<version>' or '<version>:<tie key>')
-- KEYS[4] board seal       (hash: card = members the projection was given, dcard = distinct
--                          scores; see keys.rs)
-- KEYS[5] board distinct scores (sorted set), KEYS[6] board metadata (hash: user id -> JSON)
-- KEYS[7..11] the same five for the rebuild generation (scores, versions, seal, distinct,
--         metadata): a build is in progress while KEYS[9] exists
-- ARGV[1] user id, ARGV[2] absolute score (integer, |score| <= 2^53 - 1),
-- ARGV[3] version (integer > 0), ARGV[4] marker TTL in milliseconds,
-- ARGV[5] tie key ('' for tie 0), ARGV[6] metadata as JSON text ('' for none),
-- ARGV[7] the row's moderation: '' (place the member at the row's state), 'hide' (take the
--         member out and keep a tombstone at the row's version: a removal, a ban, a banned
--         user's score) or 'erase' (take out every trace of the user, tombstone included)
-- KEYS[12] board tombstones (hash: user id -> the version that hid the member). Not part of a
--         generation: a rebuild neither writes nor replaces it. A row is stale when the member's
--         version or its tombstone's is at least the row's, so a score projected late never
--         brings back a member that a newer version hid.
--
-- Answers 'applied', 'applied_unsealed' (applied to a board that has no seal: the board needs
-- a rebuild before readers may trust it), 'duplicate' (this event was applied before) or
-- 'stale' (the projection already holds this version or a newer one). Fail-closed: a key of
-- the wrong type, or a stored value that is not one member.rs writes, is an error before any
-- write.

local problem = wrong_type(KEYS[1], 'string') or wrong_type(KEYS[2], 'zset')
  or wrong_type(KEYS[3], 'hash') or wrong_type(KEYS[4], 'hash')
  or wrong_type(KEYS[5], 'zset') or wrong_type(KEYS[6], 'hash')
  or wrong_type(KEYS[7], 'zset') or wrong_type(KEYS[8], 'hash') or wrong_type(KEYS[9], 'hash')
  or wrong_type(KEYS[10], 'zset') or wrong_type(KEYS[11], 'hash')
  or wrong_type(KEYS[12], 'hash')
if problem then
  return redis.error_reply(problem)
end

local user, key, meta = ARGV[1], ARGV[5], ARGV[6]
local version = tonumber(ARGV[3])
if version == nil or tonumber(ARGV[2]) == nil then
  return redis.error_reply('LBBADARG score and version must be numbers')
end
if key ~= '' and not string.match(key, '^%x+$') or #key ~= 0 and #key ~= 16 then
  return redis.error_reply('LBBADARG the tie key must be 16 hex digits or empty')
end

local change = ARGV[7]
if change ~= '' and change ~= 'hide' and change ~= 'erase' then
  return redis.error_reply("LBBADARG the moderation must be '', 'hide' or 'erase'")
end

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 'duplicate'
end

local tomb = redis.call('HGET', KEYS[12], user)
local tomb_version = nil
if tomb then
  tomb_version = tonumber(tomb)
  if tomb_version == nil then
    return redis.error_reply('LBCORRUPT tombstone version of a member is not a number')
  end
end

local stored = redis.call('HGET', KEYS[3], user)
local stored_version, stored_key = nil, nil
if stored then
  stored_version, stored_key = parse_stored(stored)
  if stored_version == nil then
    return redis.error_reply('LBCORRUPT stored version of a member is not a number')
  end
end
local building = redis.call('EXISTS', KEYS[9]) == 1
local rebuilt = building and redis.call('HGET', KEYS[8], user)
local rebuilt_version, rebuilt_key = nil, nil
if rebuilt then
  rebuilt_version, rebuilt_key = parse_stored(rebuilt)
  if rebuilt_version == nil then
    return redis.error_reply('LBCORRUPT stored version of a member is not a number')
  end
end

-- While a rebuild runs, the new generation gets every row too, under its own version check:
-- what the live generation shows at the switch, the new one holds as well. Its seal counts
-- nothing yet (the switch does), so no seal goes to place_member.
if building and (not rebuilt or rebuilt_version < version)
    and (not tomb_version or tomb_version < version) then
  if change == '' then
    place_member(KEYS[7], KEYS[8], KEYS[10], KEYS[11], nil, user, ARGV[2], ARGV[3], key, meta,
      rebuilt_key)
  else
    take_out(KEYS[7], KEYS[8], KEYS[10], KEYS[11], nil, user, rebuilt_key or key)
  end
end

if (stored_version and stored_version >= version) or (tomb_version and tomb_version >= version) then
  return 'stale'
end

local sealed = redis.call('EXISTS', KEYS[4]) == 1
if change ~= '' then
  local removed, removed_version = take_out(KEYS[2], KEYS[3], KEYS[5], KEYS[6],
    sealed and KEYS[4] or nil, user, stored_key or key)
  if change == 'hide' then
    redis.call('HSET', KEYS[12], user, ARGV[3])
  else
    redis.call('HDEL', KEYS[12], user)
  end
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[4])
  if not sealed then
    return 'applied_unsealed'
  end
  -- A member that was whole (in both halves) is one fewer the seal counts.
  if removed == 1 and removed_version == 1 then
    redis.call('HINCRBY', KEYS[4], 'card', -1)
  end
  return 'applied'
end

local added, added_version = place_member(KEYS[2], KEYS[3], KEYS[5], KEYS[6],
  sealed and KEYS[4] or nil, user, ARGV[2], ARGV[3], key, meta, stored_key)
redis.call('HDEL', KEYS[12], user)
redis.call('SET', KEYS[1], '1', 'PX', ARGV[4])
if not sealed then
  return 'applied_unsealed'
end
-- A member new to both halves is one more the seal must count; a member that had lost one half
-- (a damaged board), or whose spelling changed with its tie, only makes its halves whole again.
if added == 1 and added_version == 1 then
  redis.call('HINCRBY', KEYS[4], 'card', 1)
end
return 'applied'
