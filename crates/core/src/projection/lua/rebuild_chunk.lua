-- Writes one chunk of PostgreSQL rows into a board's rebuilt generation. The projector writes
-- there too while the build runs (project.lua), possibly a newer version than this chunk read,
-- so each row goes in only if the new generation holds no newer version of that member. Sent
-- after prelude.lua, members.lua and place.lua (scripts.rs): `place_member` keeps the
-- generation's distinct scores and metadata with its members.
--
-- KEYS[1] rebuilt scores (sorted set), KEYS[2] rebuilt versions (hash), KEYS[3] rebuilt seal,
-- KEYS[4] rebuilt distinct scores (sorted set), KEYS[5] rebuilt metadata (hash),
-- KEYS[6] the board's tombstones (hash, project.lua): a row whose member a newer version hid
--         since the chunk was read (a removal or ban projected meanwhile) is not written
-- ARGV[1] the rebuilt seal's TTL in milliseconds, renewed with each chunk: a build whose
--         builder died stops the projector's double writes by itself when it expires;
-- then user id, score, version, tie key ('' for tie 0), metadata JSON ('' for none), repeated
-- for every row of the chunk.
--
-- Answers the number of rows written, or an error when the rebuilt seal is gone (the build was
-- abandoned: writing on would leave keys nobody deletes).

if redis.call('EXISTS', KEYS[3]) == 0 then
  return redis.error_reply('LBNOBUILD the rebuilt generation has no seal: the build was abandoned')
end
local problem = wrong_type(KEYS[1], 'zset') or wrong_type(KEYS[2], 'hash')
  or wrong_type(KEYS[4], 'zset') or wrong_type(KEYS[5], 'hash') or wrong_type(KEYS[6], 'hash')
if problem then
  return redis.error_reply(problem)
end
redis.call('PEXPIRE', KEYS[3], ARGV[1])
local written = 0
for i = 2, #ARGV, 5 do
  local user, version = ARGV[i], tonumber(ARGV[i + 2])
  local stored = redis.call('HGET', KEYS[2], user)
  local stored_version, stored_key = nil, nil
  if stored then
    stored_version, stored_key = parse_stored(stored)
  end
  local tomb = tonumber(redis.call('HGET', KEYS[6], user) or '')
  if (not stored_version or stored_version < version) and (not tomb or tomb < version) then
    place_member(KEYS[1], KEYS[2], KEYS[4], KEYS[5], nil, user, ARGV[i + 1], ARGV[i + 2],
      ARGV[i + 3], ARGV[i + 4], stored_key)
    written = written + 1
  end
end
return written
