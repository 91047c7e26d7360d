#!lua
-- Writes one chunk of PostgreSQL rows into a board's rebuilt generation. The projector writes
-- there too while the build runs (project.lua), possibly a newer version than this chunk read,
-- so each row goes in only if the new generation holds no newer version of that member.
--
-- KEYS[1] rebuilt scores (sorted set), KEYS[2] rebuilt versions (hash), KEYS[3] rebuilt seal
-- ARGV[1] the rebuilt seal's TTL in milliseconds, renewed with each chunk: a build whose
--         builder died stops the projector's double writes by itself when it expires;
-- then user id, score, version, repeated for every row of the chunk.
--
-- Answers the number of rows written, or an error when the rebuilt seal is gone (the build was
-- abandoned: writing on would leave keys nobody deletes).

if redis.call('EXISTS', KEYS[3]) == 0 then
  return redis.error_reply('LBNOBUILD the rebuilt generation has no seal: the build was abandoned')
end
redis.call('PEXPIRE', KEYS[3], ARGV[1])
local written = 0
for i = 2, #ARGV, 3 do
  local member, version = ARGV[i], tonumber(ARGV[i + 2])
  local stored = redis.call('HGET', KEYS[2], member)
  if not stored or tonumber(stored) == nil or tonumber(stored) < version then
    redis.call('ZADD', KEYS[1], ARGV[i + 1], member)
    redis.call('HSET', KEYS[2], member, ARGV[i + 2])
    written = written + 1
  end
end
return written
