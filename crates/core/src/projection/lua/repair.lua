-- Sets one member of a board's projection to its source score and version (the reconciler's
-- repair), without ever overwriting a newer version the projector wrote meanwhile.
--
-- KEYS[1] board scores (sorted set), KEYS[2] board versions (hash)
-- ARGV[1] user id, ARGV[2] source score, ARGV[3] source version,
-- ARGV[4] mode: 'normal', or 'force' (an "ahead" row: overwrite a newer stored version, but
--         only if it is still the one the reconciler observed),
-- ARGV[5] force mode: the observed stored version ('' for none)
--
-- Answers 'repaired', 'current' (nothing to do any more) or 'skipped' (the projection moved
-- on since it was observed). Fail-closed on wrong-typed keys, like project.lua. Sent after
-- prelude.lua (scripts.rs): its `#!lua` line and `wrong_type`.

local problem = wrong_type(KEYS[1], 'zset') or wrong_type(KEYS[2], 'hash')
if problem then
  return redis.error_reply(problem)
end

local member, score, version = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if score == nil or version == nil then
  return redis.error_reply('LBBADARG score and version must be numbers')
end

local stored = redis.call('HGET', KEYS[2], member)
local current_score = redis.call('ZSCORE', KEYS[1], member)

if ARGV[4] == 'force' then
  if (stored or '') ~= ARGV[5] then
    return 'skipped'
  end
else
  local stored_version = stored and tonumber(stored)
  if stored_version and stored_version > version then
    return 'skipped'
  end
  if stored_version == version and current_score and tonumber(current_score) == score then
    return 'current'
  end
end

redis.call('ZADD', KEYS[1], ARGV[2], member)
redis.call('HSET', KEYS[2], member, ARGV[3])
return 'repaired'
