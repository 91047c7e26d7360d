
-- Applies a batch's outbox rows of one board to its projection, in order, in one call (issue
-- 23: one call per row cost Redis a script call, argument parsing and eleven type checks per
-- row). Sent after prelude.lua, members.lua and place.lua (scripts.rs), which give it its
-- `#!lua` line (Redis refuses the whole call with OOM before it runs when memory is full, so
-- no call ever writes half), `wrong_type`, `key_ok`, `parse_stored` and `place_member`.
--
-- KEYS[1] board scores     (sorted set: member = user id, or its key and user id; member.rs)
-- KEYS[2] board versions   (hash: user id -> '<version>' or '<version>:<key>')
-- KEYS[3] board seal       (hash: card = members the projection was given, dcard = distinct
--                          scores; see keys.rs)
-- KEYS[4] board distinct scores (sorted set; written only while the seal has dcard),
-- KEYS[5] board metadata (hash: user id -> JSON)
-- KEYS[6..10] the same five for the rebuild generation (scores, versions, seal, distinct,
--         metadata): a build is in progress while KEYS[8] exists, and builds the distinct
--         scores when KEYS[8] has `dense`
-- KEYS[11] board tombstones (hash: user id -> the version that hid the member). Not part of a
--         generation: a rebuild neither writes nor replaces it. A row is stale when the member's
--         version or its tombstone's is at least the row's, so a score projected late never
--         brings back a member that a newer version hid.
-- KEYS[12] board change sequence (string, keys.rs `:q`): moved forward by every call that
--         applies a row, so that the projector's top read (lua/top.lua) and the api's live
--         updates can tell "changed since" from one number
-- KEYS[13 ..] one event marker (string, with a TTL) per row, in the rows' order
-- ARGV[1] marker TTL in milliseconds; ARGV[2] the live channel ('' to publish nothing),
-- ARGV[3] the board id the message names; then six per row, in the rows' order:
--   user id, absolute score (integer, |score| <= 2^53 - 1), version (integer > 0), the member's
--   key (member.rs's `key_text`: its other columns and tie; '' for a one-column board's tie 0),
--   metadata as JSON text ('' for none), the row's moderation: '' (place the
--   member at the row's state), 'hide' (take the member out and keep a tombstone at the row's
--   version: a removal, a ban, a banned user's score) or 'erase' (take out every trace of the
--   user, tombstone included)
--
-- Answers one string per row, in order: 'applied', 'applied_unsealed' (applied to a board
-- that has no seal: the board needs a rebuild before readers may trust it), 'duplicate' (this
-- event was applied before), 'stale' (the projection already holds this version or a newer
-- one), or 'failed:' and the reason for a row refused without any write (LBBADARG, LBCORRUPT,
-- LBWRONGTYPE of its marker): a row's fault, charged to that row alone. Fail-closed: a board
-- key of the wrong type is an error of the whole call, before any write.
--
-- A call that applied at least one row (a repeat or a stale row changes nothing) sets the
-- change sequence to max(its value + 1, the server's clock in microseconds) and publishes
-- '<sequence> <board>' on the live channel, in the same atomic step as the change: the clock
-- keeps the sequence increasing when the key is lost (a Redis restarted empty, an archived
-- period's keys unlinked), so a reader holding an older value never mistakes a new change for
-- one it has seen. Redis 7 replicates scripts by their effects, so reading TIME before the
-- write is allowed.

local problem = wrong_type(KEYS[1], 'zset') or wrong_type(KEYS[2], 'hash')
  or wrong_type(KEYS[3], 'hash') or wrong_type(KEYS[4], 'zset') or wrong_type(KEYS[5], 'hash')
  or wrong_type(KEYS[6], 'zset') or wrong_type(KEYS[7], 'hash') or wrong_type(KEYS[8], 'hash')
  or wrong_type(KEYS[9], 'zset') or wrong_type(KEYS[10], 'hash')
  or wrong_type(KEYS[11], 'hash') or wrong_type(KEYS[12], 'string')
if problem then
  return redis.error_reply(problem)
end
local rows = #KEYS - 12
if rows < 1 or #ARGV ~= 3 + 6 * rows then
  return redis.error_reply('LBBADARG one marker key and six arguments per row')
end
local ttl = ARGV[1]
-- Neither changes while the script runs: no row creates or removes a seal.
local sealed = redis.call('EXISTS', KEYS[3]) == 1
local building = redis.call('EXISTS', KEYS[8]) == 1
-- Each generation's distinct scores, or nil where it keeps none (members.lua).
local live_distinct = distinct_kept(sealed and KEYS[3], 'dcard', KEYS[4])
local build_distinct = distinct_kept(building and KEYS[8], 'dense', KEYS[9])

-- The member's value in the versions hash `hash`, and its version and tie key: false when
-- the member has none, a nil version when the value is not one `member.rs` writes.
local function read_stored(hash, user)
  local value = redis.call('HGET', hash, user)
  if not value then
    return false, nil, nil
  end
  local version, key = parse_stored(value)
  return value, version, key
end

local function apply_row(marker, user, score, version_text, key, meta, change)
  local marker_problem = wrong_type(marker, 'string')
  if marker_problem then
    return 'failed:' .. marker_problem
  end
  local version = tonumber(version_text)
  if version == nil or tonumber(score) == nil then
    return 'failed:LBBADARG score and version must be numbers'
  end
  if not key_ok(key) then
    return 'failed:LBBADARG the key must be empty, 16 hex digits, or a column count and its groups'
  end
  if change ~= '' and change ~= 'hide' and change ~= 'erase' then
    return "failed:LBBADARG the moderation must be '', 'hide' or 'erase'"
  end

  local tomb = redis.call('HGET', KEYS[11], user)
  local tomb_version = nil
  if tomb then
    tomb_version = tonumber(tomb)
    if tomb_version == nil then
      return 'failed:LBCORRUPT tombstone version of a member is not a number'
    end
  end

  local stored, stored_version, stored_key = read_stored(KEYS[2], user)
  if stored and not stored_version then
    return 'failed:LBCORRUPT stored version of a member is not a number'
  end
  local rebuilt, rebuilt_version, rebuilt_key = false, nil, nil
  if building then
    rebuilt, rebuilt_version, rebuilt_key = read_stored(KEYS[7], user)
    if rebuilt and not rebuilt_version then
      return 'failed:LBCORRUPT stored version of a member is not a number'
    end
  end

  -- While a rebuild runs, the new generation gets every row too, under its own version check:
  -- what the live generation shows at the switch, the new one holds as well. Its seal counts
  -- nothing yet (the switch does), so no seal goes to place_member.
  if building and (not rebuilt or rebuilt_version < version)
      and (not tomb_version or tomb_version < version) then
    if change == '' then
      place_member(KEYS[6], KEYS[7], build_distinct, KEYS[10], nil, user, score, version_text,
        key, meta, rebuilt_key)
    else
      take_out(KEYS[6], KEYS[7], build_distinct, KEYS[10], nil, user, rebuilt_key or key)
    end
    -- The build looks its rows' versions up only once this is set (rebuild_chunk.lua).
    redis.call('HINCRBY', KEYS[8], 'touched', 1)
  end

  -- A repeat changes nothing live. It is judged after the new generation's write, so that no
  -- answer, not even a repeat's, can leave a version out of the generation being built.
  if redis.call('EXISTS', marker) == 1 then
    return 'duplicate'
  end
  if (stored_version and stored_version >= version)
      or (tomb_version and tomb_version >= version) then
    return 'stale'
  end

  if change ~= '' then
    local removed, removed_version = take_out(KEYS[1], KEYS[2], live_distinct, KEYS[5],
      sealed and KEYS[3] or nil, user, stored_key or key)
    if change == 'hide' then
      redis.call('HSET', KEYS[11], user, version_text)
    else
      redis.call('HDEL', KEYS[11], user)
    end
    redis.call('SET', marker, '1', 'PX', ttl)
    if not sealed then
      return 'applied_unsealed'
    end
    -- A member that was whole (in both halves) is one fewer the seal counts.
    if removed == 1 and removed_version == 1 then
      redis.call('HINCRBY', KEYS[3], 'card', -1)
    end
    return 'applied'
  end

  local added, added_version = place_member(KEYS[1], KEYS[2], live_distinct, KEYS[5],
    sealed and KEYS[3] or nil, user, score, version_text, key, meta, stored_key)
  redis.call('HDEL', KEYS[11], user)
  redis.call('SET', marker, '1', 'PX', ttl)
  if not sealed then
    return 'applied_unsealed'
  end
  -- A member new to both halves is one more the seal must count; a member that had lost one
  -- half (a damaged board), or whose spelling changed with its tie, only makes its halves whole
  -- again.
  if added == 1 and added_version == 1 then
    redis.call('HINCRBY', KEYS[3], 'card', 1)
  end
  return 'applied'
end

local answers = {}
local changed = false
for i = 1, rows do
  local a = 3 + 6 * (i - 1)
  answers[i] = apply_row(KEYS[12 + i], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4],
    ARGV[a + 5], ARGV[a + 6])
  if answers[i] == 'applied' or answers[i] == 'applied_unsealed' then
    changed = true
  end
end
if changed then
  local now = redis.call('TIME')
  local clock = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local sequence = math.max((tonumber(redis.call('GET', KEYS[12])) or 0) + 1, clock)
  -- '%.0f': an integer below 2^53 printed whole (tostring would print 1.7e+15).
  local text = string.format('%.0f', sequence)
  redis.call('SET', KEYS[12], text)
  if ARGV[2] ~= '' then
    redis.call('PUBLISH', ARGV[2], text .. ' ' .. ARGV[3])
  end
end
return answers
