-- Removes a member that has no source row (an orphan) from a board's projection, unless its
-- stored version changed since the reconciler observed it (the projector wrote it meanwhile,
-- so a source row now exists).
--
-- KEYS[1] board scores (sorted set), KEYS[2] board versions (hash)
-- ARGV[1] user id, ARGV[2] the observed stored version ('' for none)
--
-- Answers 'removed', or 'skipped' (changed since observed, or already gone). Fail-closed on
-- wrong-typed keys, like the other scripts. Sent after prelude.lua (scripts.rs): its `#!lua`
-- line and `wrong_type`.

local problem = wrong_type(KEYS[1], 'zset') or wrong_type(KEYS[2], 'hash')
if problem then
  return redis.error_reply(problem)
end

local stored = redis.call('HGET', KEYS[2], ARGV[1])
if (stored or '') ~= ARGV[2] then
  return 'skipped'
end
local gone = redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('HDEL', KEYS[2], ARGV[1])
if gone == 0 then
  return 'skipped'
end
return 'removed'
