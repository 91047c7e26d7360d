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
-- then user id, score, version, the member's key (member.rs's `key_text`; '' for a one-column
-- board's tie 0), metadata JSON ('' for none), repeated
-- for every row of the chunk.
--
-- The projector reaches few members of a board while it is being built, so nearly every row
-- finds its member absent from the new generation: those go in with a few bulk calls (ZADD,
-- HSET, HDEL, the distinct scores), not with place_member's ten calls each, which made the
-- build of a 1M-user board take 10 s of Redis's one thread. A row whose member is there
-- (a newer write by the projector, or a member edited by hand) takes place_member as before.
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
local users, members = {}, {}
for i = 2, #ARGV, 5 do
  local user = ARGV[i]
  users[#users + 1] = user
  members[#members + 1] = member_of(user, ARGV[i + 3])
end
local stored = call_sliced('HMGET', KEYS[2], users, 1)
-- Most builds meet no tombstone and no metadata hash in the new generation: the HMGET of
-- the tombstones and the HDEL of members without metadata (a lookup per row that finds
-- nothing) are skipped while their key does not exist (Redis CPU per row of a 1M-row
-- rebuild, catch-up included: 12.1 µs before, 11.3 µs after, one release run each).
local tombs = {}
if redis.call('EXISTS', KEYS[6]) == 1 then
  tombs = call_sliced('HMGET', KEYS[6], users, 1)
end
local scored = call_sliced('ZMSCORE', KEYS[1], members, 1)
local added, versions, with_meta, without_meta, distinct = {}, {}, {}, {}, {}
local written = 0
for j, user in ipairs(users) do
  local i = 2 + (j - 1) * 5
  local score, version, key, meta = ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3], ARGV[i + 4]
  local stored_version, stored_key = nil, nil
  if stored[j] then
    stored_version, stored_key = parse_stored(stored[j])
  end
  local tomb = tonumber(tombs[j] or '')
  if (not stored_version or stored_version < version) and (not tomb or tomb < version) then
    if not stored[j] and not scored[j] then
      added[#added + 1] = score
      added[#added + 1] = members[j]
      versions[#versions + 1] = user
      versions[#versions + 1] = stored_of(ARGV[i + 2], key)
      if meta == '' then
        without_meta[#without_meta + 1] = user
      else
        with_meta[#with_meta + 1] = user
        with_meta[#with_meta + 1] = meta
      end
      distinct[#distinct + 1] = score
      distinct[#distinct + 1] = distinct_name(score, members[j])
    else
      place_member(KEYS[1], KEYS[2], KEYS[4], KEYS[5], nil, user, score, ARGV[i + 2], key, meta,
        stored_key)
    end
    written = written + 1
  end
end
call_sliced('ZADD', KEYS[1], added, 2)
call_sliced('HSET', KEYS[2], versions, 2)
call_sliced('HSET', KEYS[5], with_meta, 2)
if redis.call('EXISTS', KEYS[5]) == 1 then
  call_sliced('HDEL', KEYS[5], without_meta, 1)
end
call_sliced('ZADD', KEYS[4], distinct, 2)
return written
