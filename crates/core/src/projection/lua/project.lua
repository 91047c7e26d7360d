-- Applies one outbox row to a board's projection. Sent after prelude.lua (scripts.rs), which
-- gives it its `#!lua` line (Redis refuses the whole call with OOM before it runs when memory is
-- full, so no call ever writes half) and `wrong_type`.
--
-- KEYS[1] event marker     (string, with a TTL)
-- KEYS[2] board scores     (sorted set: member user id, score the absolute score)
-- KEYS[3] board versions   (hash: user id -> version of the score in KEYS[2])
-- KEYS[4] board seal       (hash: card = members the projection was given; see keys.rs)
-- KEYS[5] rebuild scores, KEYS[6] rebuild versions, KEYS[7] rebuild seal (a build in progress
--         while KEYS[7] exists)
-- ARGV[1] user id, ARGV[2] absolute score (integer, |score| <= 2^53 - 1),
-- ARGV[3] version (integer > 0), ARGV[4] marker TTL in milliseconds
--
-- Answers 'applied', 'applied_unsealed' (applied to a board that has no seal: the board needs
-- a rebuild before readers may trust it), 'duplicate' (this event was applied before) or
-- 'stale' (the projection already holds this version or a newer one). Fail-closed: a key of
-- the wrong type, or a stored version that is not a number, is an error before any write.

local problem = wrong_type(KEYS[1], 'string') or wrong_type(KEYS[2], 'zset')
  or wrong_type(KEYS[3], 'hash') or wrong_type(KEYS[4], 'hash')
  or wrong_type(KEYS[5], 'zset') or wrong_type(KEYS[6], 'hash') or wrong_type(KEYS[7], 'hash')
if problem then
  return redis.error_reply(problem)
end

local version = tonumber(ARGV[3])
if version == nil or tonumber(ARGV[2]) == nil then
  return redis.error_reply('LBBADARG score and version must be numbers')
end

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 'duplicate'
end

local stored = redis.call('HGET', KEYS[3], ARGV[1])
local stored_version = nil
if stored then
  stored_version = tonumber(stored)
  if stored_version == nil then
    return redis.error_reply('LBCORRUPT stored version of a member is not a number')
  end
end
local building = redis.call('EXISTS', KEYS[7]) == 1
local rebuilt = building and redis.call('HGET', KEYS[6], ARGV[1])
if rebuilt and tonumber(rebuilt) == nil then
  return redis.error_reply('LBCORRUPT stored version of a member is not a number')
end

-- While a rebuild runs, the new generation gets every row too, under its own version check:
-- what the live generation shows at the switch, the new one holds as well.
if building and (not rebuilt or tonumber(rebuilt) < version) then
  redis.call('ZADD', KEYS[5], ARGV[2], ARGV[1])
  redis.call('HSET', KEYS[6], ARGV[1], ARGV[3])
end

if stored_version and stored_version >= version then
  return 'stale'
end

local added = redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
local added_version = redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
redis.call('SET', KEYS[1], '1', 'PX', ARGV[4])
if redis.call('EXISTS', KEYS[4]) == 0 then
  return 'applied_unsealed'
end
-- A member new to both halves is one more the seal must count; a member that had lost one half
-- (a damaged board) only makes that half whole again.
if added == 1 and added_version == 1 then
  redis.call('HINCRBY', KEYS[4], 'card', 1)
end
return 'applied'
