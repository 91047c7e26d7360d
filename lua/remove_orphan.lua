-- Removes a member that has no source row (an orphan) from a board's projection, unless its
-- stored value changed since the reconciler observed it (the projector wrote it meanwhile,
-- so a source row now exists); or, for a user who has a source row, one stray spelling of its
-- member that the versions hash does not name (left by a hand edit).
--
-- KEYS[1] board scores (sorted set), KEYS[2] board versions (hash), KEYS[3] board seal,
-- KEYS[4] board distinct scores (sorted set), KEYS[5] board metadata (hash)
-- ARGV[1] user id, ARGV[2] the observed stored value ('' for none),
-- ARGV[3] mode: 'orphan' (no source row: the member the stored value names, the member
--         ARGV[4] names, its version and its metadata go) or 'stray' (only the member ARGV[4]
--         names goes, and only while the versions hash still does not name it),
-- ARGV[4] the member observed in the sorted set ('' for none)
--
-- Answers 'removed', or 'skipped' (changed since observed, or already gone). Fail-closed on
-- wrong-typed keys, like the other scripts. Sent after prelude.lua and members.lua
-- (scripts.rs): its `#!lua` line, `wrong_type`, `parse_stored`, `distinct_kept`,
-- `move_distinct`, `move_metadata`.

local problem = wrong_type(KEYS[1], 'zset') or wrong_type(KEYS[2], 'hash')
  or wrong_type(KEYS[3], 'hash') or wrong_type(KEYS[4], 'zset') or wrong_type(KEYS[5], 'hash')
if problem then
  return redis.error_reply(problem)
end

local user, observed = ARGV[1], ARGV[4]
local stored = redis.call('HGET', KEYS[2], user)
if (stored or '') ~= ARGV[2] then
  return 'skipped'
end
local seal = nil
if redis.call('EXISTS', KEYS[3]) == 1 then
  seal = KEYS[3]
end
local distinct = distinct_kept(seal, 'dcard', KEYS[4])

-- Removes one member from the sorted set, moving the distinct scores with it.
local function drop(member)
  local score = redis.call('ZSCORE', KEYS[1], member)
  if not score then
    return 0
  end
  redis.call('ZREM', KEYS[1], member)
  move_distinct(KEYS[1], distinct, seal, score, member, nil, nil)
  return 1
end

local named = nil
if stored then
  local _, key = parse_stored(stored)
  if key then
    named = member_of(user, key)
  end
end

local gone = 0
if ARGV[3] == 'stray' then
  if observed == '' or observed == named then
    return 'skipped'
  end
  gone = drop(observed)
else
  if named then
    gone = gone + drop(named)
  end
  if observed ~= '' and observed ~= named then
    gone = gone + drop(observed)
  end
  gone = gone + redis.call('HDEL', KEYS[2], user)
  move_metadata(KEYS[5], seal, user, '')
end
if gone == 0 then
  return 'skipped'
end
return 'removed'
