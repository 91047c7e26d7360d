#!lua
-- Makes a rebuilt generation of a board live in one atomic step: the live keys become the
-- retired ones (deleted afterwards with UNLINK, off Redis's main thread), the rebuilt keys
-- become the live ones, and the rebuilt seal becomes the board's seal, counting the members
-- the new generation holds. Readers see either the old or the new generation, never a mix.
--
-- KEYS[1] live scores, KEYS[2] live versions, KEYS[3] rebuilt scores, KEYS[4] rebuilt versions,
-- KEYS[5] retired scores, KEYS[6] retired versions, KEYS[7] live seal, KEYS[8] rebuilt seal.
-- ARGV[1] 'seal' (seal the new generation) or 'unseal' (the board has no rows in PostgreSQL:
-- switch, and leave no seal behind, so reads of unknown boards create no keys).
--
-- Answers 'switched', or an error when the rebuilt seal is gone (the build was abandoned or
-- its keys deleted): the live generation is then left as it was.

if redis.call('EXISTS', KEYS[8]) == 0 then
  return redis.error_reply('LBNOBUILD the rebuilt generation has no seal: the build was abandoned')
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RENAME', KEYS[1], KEYS[5])
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('RENAME', KEYS[2], KEYS[6])
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('RENAME', KEYS[3], KEYS[1])
end
if redis.call('EXISTS', KEYS[4]) == 1 then
  redis.call('RENAME', KEYS[4], KEYS[2])
end
if ARGV[1] == 'seal' then
  redis.call('HSET', KEYS[8], 'card', redis.call('ZCARD', KEYS[1]))
  redis.call('RENAME', KEYS[8], KEYS[7])
  -- The build's seal had a TTL (rebuild_chunk.lua); the board's seal lives as long as its keys.
  redis.call('PERSIST', KEYS[7])
else
  redis.call('DEL', KEYS[8], KEYS[7])
end
return 'switched'
