#!lua
-- Applies one outbox row to a board's projection. The `#!lua` line (Redis 7) makes Redis refuse
-- the whole call with OOM before it runs when memory is full, so no call ever writes half.
--
-- KEYS[1] event marker     (string, with a TTL)
-- KEYS[2] board scores     (sorted set: member user id, score the absolute score)
-- KEYS[3] board versions   (hash: user id -> version of the score in KEYS[2])
-- ARGV[1] user id, ARGV[2] absolute score (integer, |score| <= 2^53 - 1),
-- ARGV[3] version (integer > 0), ARGV[4] marker TTL in milliseconds
--
-- Answers 'applied', 'duplicate' (this event was applied before) or 'stale' (the projection
-- already holds this version or a newer one). Fail-closed: a key of the wrong type, or a
-- stored version that is not a number, is an error before any write.

local function wrong_type(key, expected)
  local actual = redis.call('TYPE', key)['ok']
  if actual ~= 'none' and actual ~= expected then
    return 'LBWRONGTYPE ' .. key .. ' is a ' .. actual .. ', expected a ' .. expected
  end
  return nil
end

local problem = wrong_type(KEYS[1], 'string') or wrong_type(KEYS[2], 'zset')
  or wrong_type(KEYS[3], 'hash')
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
if stored then
  local stored_version = tonumber(stored)
  if stored_version == nil then
    return redis.error_reply('LBCORRUPT stored version of a member is not a number')
  end
  if stored_version >= version then
    return 'stale'
  end
end

redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
redis.call('SET', KEYS[1], '1', 'PX', ARGV[4])
return 'applied'
