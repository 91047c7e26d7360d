-- Sets one member of a board's projection to its source score, key and version (the
-- reconciler's repair), without ever overwriting a newer version the projector wrote meanwhile.
-- Sent after prelude.lua, members.lua and place.lua (scripts.rs): its `#!lua` line,
-- `wrong_type`, `parse_stored`, `place_member`.
--
-- KEYS[1] board scores (sorted set), KEYS[2] board versions (hash), KEYS[3] board seal,
-- KEYS[4] board distinct scores (sorted set), KEYS[5] board metadata (hash)
-- ARGV[1] user id, ARGV[2] source score, ARGV[3] source version,
-- ARGV[4] mode: 'normal', or 'force' (an "ahead" row: overwrite a newer stored version, but
--         only if it is still the one the reconciler observed),
-- ARGV[5] force mode: the observed stored value ('' for none),
-- ARGV[6] source key (member.rs's `key_text`: other columns and tie; '' for a one-column
--         board's tie 0), ARGV[7] source metadata JSON ('' for none)
--
-- Answers 'repaired', 'current' (nothing to do any more) or 'skipped' (the projection moved
-- on since it was observed). Fail-closed on wrong-typed keys, like project.lua. The member
-- under its old spelling (the tie key the versions hash held) goes, the distinct scores and
-- the seal's dcard follow where the seal has dcard; the seal's card does not (repairs do not
-- seal).

local problem = wrong_type(KEYS[1], 'zset') or wrong_type(KEYS[2], 'hash')
  or wrong_type(KEYS[3], 'hash') or wrong_type(KEYS[4], 'zset') or wrong_type(KEYS[5], 'hash')
if problem then
  return redis.error_reply(problem)
end

local user, score, version = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local key, meta = ARGV[6], ARGV[7]
if score == nil or version == nil then
  return redis.error_reply('LBBADARG score and version must be numbers')
end

local stored = redis.call('HGET', KEYS[2], user)
local stored_version, stored_key = nil, nil
if stored then
  stored_version, stored_key = parse_stored(stored)
end

if ARGV[4] == 'force' then
  if (stored or '') ~= ARGV[5] then
    return 'skipped'
  end
else
  if stored_version and stored_version > version then
    return 'skipped'
  end
  if stored_version == version and stored_key == key then
    local current_score = redis.call('ZSCORE', KEYS[1], member_of(user, key))
    if current_score and tonumber(current_score) == score
        and (redis.call('HGET', KEYS[5], user) or '') == meta then
      return 'current'
    end
  end
end

local seal = nil
if redis.call('EXISTS', KEYS[3]) == 1 then
  seal = KEYS[3]
end
place_member(KEYS[1], KEYS[2], distinct_kept(seal, 'dcard', KEYS[4]), KEYS[5], seal, user,
  ARGV[2], ARGV[3], key, meta, stored_key)
return 'repaired'
