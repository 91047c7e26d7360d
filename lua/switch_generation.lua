#!lua
-- Makes a rebuilt generation of a board live in one atomic step: the live keys become the
-- retired ones (deleted afterwards with UNLINK, off Redis's main thread), the rebuilt keys
-- become the live ones, and the rebuilt seal becomes the board's seal, counting the members
-- and the distinct scores the new generation holds. Readers see either the old or the new
-- generation, never a mix. The seal counts the members (card), the distinct scores (dcard,
-- only when the build kept them: its seal's `dense`) and the members with metadata (xcard).
--
-- KEYS[1..12] the live, rebuilt and retired names of each of the board's four generation keys, in
-- groups of three: KEYS[1] live scores, KEYS[2] rebuilt scores, KEYS[3] retired scores, then
-- the same for the versions (KEYS[4..6]), distinct scores (KEYS[7..9]) and metadata
-- (KEYS[10..12]); KEYS[13] live seal, KEYS[14] rebuilt seal.
-- ARGV[1] 'seal' (seal the new generation) or 'unseal' (the board has no rows in PostgreSQL:
-- switch, and leave no seal behind, so reads of unknown boards create no keys).
-- ARGV[2] the board's order as model/order.rs's `Order::encode` spells it ('descending:user_id'):
-- a read that cannot ask PostgreSQL for the definition reads it from the seal.
--
-- Answers 'switched', or an error when the rebuilt seal is gone (the build was abandoned or
-- its keys deleted): the live generation is then left as it was.

if redis.call('EXISTS', KEYS[14]) == 0 then
  return redis.error_reply('LBNOBUILD the rebuilt generation has no seal: the build was abandoned')
end
for group = 0, 3 do
  local live, rebuilt, retired = KEYS[group * 3 + 1], KEYS[group * 3 + 2], KEYS[group * 3 + 3]
  if redis.call('EXISTS', live) == 1 then
    redis.call('RENAME', live, retired)
  end
  if redis.call('EXISTS', rebuilt) == 1 then
    redis.call('RENAME', rebuilt, live)
  end
end
if ARGV[1] == 'seal' then
  redis.call('HSET', KEYS[14], 'card', redis.call('ZCARD', KEYS[1]),
    'xcard', redis.call('HLEN', KEYS[10]), 'order', ARGV[2])
  -- Only a build that kept the distinct scores (its seal says `dense`) counts them: a seal
  -- without dcard tells the projector to keep none, and dense reads to fall back.
  if redis.call('HEXISTS', KEYS[14], 'dense') == 1 then
    redis.call('HSET', KEYS[14], 'dcard', redis.call('ZCARD', KEYS[7]))
    redis.call('HDEL', KEYS[14], 'dense')
  end
  redis.call('RENAME', KEYS[14], KEYS[13])
  -- The build's seal had a TTL (rebuild_chunk.lua); the board's seal lives as long as its keys.
  redis.call('PERSIST', KEYS[13])
else
  redis.call('DEL', KEYS[14], KEYS[13])
end
return 'switched'
