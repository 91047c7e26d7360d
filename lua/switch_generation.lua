#!lua
-- Makes a rebuilt generation of a board live in one atomic step: the live keys become the
-- retired ones (deleted afterwards with UNLINK, off Redis's main thread), the rebuilt keys
-- become the live ones. Readers see either the old or the new generation, never a mix.
--
-- KEYS[1] live scores, KEYS[2] live versions, KEYS[3] rebuilt scores, KEYS[4] rebuilt versions,
-- KEYS[5] retired scores, KEYS[6] retired versions.

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
return 'switched'
