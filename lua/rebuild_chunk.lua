-- Writes one chunk of PostgreSQL rows into a board's rebuilt generation. The projector writes
-- there too while the build runs (project.lua), possibly a newer version than this chunk read,
-- so each row goes in only if the new generation holds no newer version of that member. Sent
-- after prelude.lua, members.lua and place.lua (scripts.rs): `place_member` keeps the
-- generation's distinct scores and metadata with its members.
--
-- KEYS[1] rebuilt scores (sorted set), KEYS[2] rebuilt versions (hash), KEYS[3] rebuilt seal
-- (its `dense` field: the board is read with dense ranks, so the build keeps its distinct
-- scores, generation.rs; its `touched` field: the projector has written the new generation,
-- project.lua), KEYS[4] rebuilt distinct scores (sorted set; written only for a
-- dense build), KEYS[5] rebuilt metadata (hash),
-- KEYS[6] the board's tombstones (hash, project.lua): a row whose member a newer version hid
--         since the chunk was read (a removal or ban projected meanwhile) is not written
-- ARGV[1] the rebuilt seal's TTL in milliseconds, renewed with each chunk: a build whose
--         builder died stops the projector's double writes by itself when it expires;
-- ARGV[2] n, the chunk's rows; then the rows in two sections of the same order, laid out as
-- the bulk commands take them (generation.rs): n pairs score, member (member.rs's spelling),
-- n pairs user id, versions-hash value (member.rs's `stored`); then a pair user id, metadata
-- JSON for each row that has metadata.
--
-- Only the projector writes the new generation besides the build (a rebuild's start deletes
-- what an earlier one left), and it marks the seal `touched` when it does. Until then no user
-- of a chunk has a version there (chunks are disjoint), so the versions are not looked up.
-- When no user of the chunk has a version or a tombstone and the build keeps no distinct
-- scores, the chunk goes in as the sections stand: ZADD, HSET and HSET of slices of the
-- arguments, with no work per row in Lua, which cost Redis about 2.5 us per row (INFO
-- commandstats of a 1M-user rebuild: EVALSHA's time less the commands it ran), and the
-- versions lookup 0.3 us more. Without a stored version a user has no metadata in the new
-- generation either (place_member writes both halves, take_out removes both), so nothing is
-- deleted. Otherwise each row is judged on its own: written only where the new generation
-- holds no newer version, a member already there through place_member one by one (its old
-- spelling goes, the distinct scores follow), the rest in bulk as before.
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
local n = tonumber(ARGV[2])
if n == nil or #ARGV < 2 + 4 * n or (#ARGV - 2 - 4 * n) % 2 ~= 0 then
  return redis.error_reply('LBBADARG the chunk is n, then its two sections and metadata pairs')
end
redis.call('PEXPIRE', KEYS[3], ARGV[1])
local distinct_key = distinct_kept(KEYS[3], 'dense', KEYS[4])
-- Where each section starts: (score, member) pairs, (user, stored) pairs, metadata pairs.
local scored_at, stored_at, meta_at = 3, 3 + 2 * n, 3 + 4 * n

local function all_absent(list)
  for j = 1, n do
    if list[j] then
      return false
    end
  end
  return true
end

-- The chunk's users, listed only when something must be looked up for them.
local users = nil
local function user_list()
  if not users then
    users = {}
    for j = 1, n do
      users[j] = ARGV[stored_at + 2 * (j - 1)]
    end
  end
  return users
end
local stored, tombs = {}, {}
if redis.call('HEXISTS', KEYS[3], 'touched') == 1 then
  stored = call_sliced('HMGET', KEYS[2], user_list(), 1)
end
-- Most builds meet no tombstone: the lookup is skipped while the key does not exist.
if redis.call('EXISTS', KEYS[6]) == 1 then
  tombs = call_sliced('HMGET', KEYS[6], user_list(), 1)
end
if not distinct_key and all_absent(stored) and all_absent(tombs) then
  call_sliced('ZADD', KEYS[1], ARGV, 2, scored_at, stored_at - 1)
  call_sliced('HSET', KEYS[2], ARGV, 2, stored_at, meta_at - 1)
  call_sliced('HSET', KEYS[5], ARGV, 2, meta_at, #ARGV)
  return n
end

-- Row by row. The metadata of the rows that have some, by user.
local metas = {}
for i = meta_at, #ARGV, 2 do
  metas[ARGV[i]] = ARGV[i + 1]
end
-- A member only the sorted set holds (no version: a hand edit) matters only for the distinct
-- scores; without them the bulk ZADD sets its score and nothing else names it.
local scored = {}
if distinct_key then
  local members = {}
  for j = 1, n do
    members[j] = ARGV[scored_at + 2 * j - 1]
  end
  scored = call_sliced('ZMSCORE', KEYS[1], members, 1)
end
-- Every row's version and key, checked before anything is written.
local parsed = {}
for j = 1, n do
  local version, key = parse_stored(ARGV[stored_at + 2 * j - 1])
  if version == nil then
    return redis.error_reply("LBBADARG a row's versions-hash value is not one member.rs writes")
  end
  parsed[j] = { version, key }
end
local added, versions, with_meta, without_meta, distinct = {}, {}, {}, {}, {}
local written = 0
for j = 1, n do
  local user = ARGV[stored_at + 2 * (j - 1)]
  local score, member = ARGV[scored_at + 2 * (j - 1)], ARGV[scored_at + 2 * j - 1]
  local value = ARGV[stored_at + 2 * j - 1]
  local version, key = parsed[j][1], parsed[j][2]
  local meta = metas[user] or ''
  local stored_version, stored_key = nil, nil
  if stored[j] then
    stored_version, stored_key = parse_stored(stored[j])
  end
  local tomb = tonumber(tombs[j] or '')
  if (not stored_version or stored_version < version) and (not tomb or tomb < version) then
    if not stored[j] and not scored[j] then
      added[#added + 1] = score
      added[#added + 1] = member
      versions[#versions + 1] = user
      versions[#versions + 1] = value
      if meta == '' then
        without_meta[#without_meta + 1] = user
      else
        with_meta[#with_meta + 1] = user
        with_meta[#with_meta + 1] = meta
      end
      if distinct_key then
        distinct[#distinct + 1] = score
        distinct[#distinct + 1] = distinct_name(score, member)
      end
    else
      place_member(KEYS[1], KEYS[2], distinct_key, KEYS[5], nil, user, score,
        string.match(value, '^%d+'), key, meta, stored_key)
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
if distinct_key then
  call_sliced('ZADD', distinct_key, distinct, 2)
end
return written
