-- Shared by the scripts that touch members (scripts.rs puts it after prelude.lua, or after a
-- read script's own `#!lua flags=no-writes` line): how a member and a versions-hash value are
-- spelt (member.rs), and the distinct-scores set that dense ranks count. It has no `#!lua`
-- line: the first line of the whole text carries the flags.

-- How a member is spelt (member.rs): the user id alone on boards whose ties go by user id
-- (`key` ''), else "\1", the 16-digit tie key, the user id. Byte order of members is then the
-- database's order of (tie, user_id).
local function member_of(user, key)
  if key == nil or key == '' then
    return user
  end
  return '\1' .. key .. user
end

-- The version and tie key ('' for none) of a versions-hash value, '<version>' or
-- '<version>:<16 hex digits>' (member.rs's `stored`); nil when it is neither.
local function parse_stored(value)
  local version = tonumber(value)
  if version then
    return version, ''
  end
  local v, key = string.match(value, '^(%d+):(%x+)$')
  if v and #key == 16 then
    return tonumber(v), key
  end
  return nil
end

-- A versions-hash value (member.rs's `stored`): '<version>', or '<version>:<tie key>'.
local function stored_of(version, key)
  if key == '' then
    return version
  end
  return version .. ':' .. key
end

-- A score as the distinct-scores set names it: the integer in decimal, whatever spelling
-- Redis used for the double (ZSCORE may answer '1e+15' on some versions).
local function score_name(score)
  return string.format('%d', tonumber(score))
end

-- Keeps a board's distinct-scores set (:d, for dense ranks) true after one member of `scores`
-- went from score `old` (nil: it was not there) to `new` (nil: it was removed); call it after
-- the ZADD or ZREM. `seal` is the board's seal key when dcard must follow (the live
-- generation); dcard is only moved where it exists: a seal written before :d existed has none,
-- and its board is not trusted for dense ranks until a rebuild counts them.
local function move_distinct(scores, distinct, seal, old, new)
  if old ~= nil and (new == nil or tonumber(old) ~= tonumber(new)) then
    if redis.call('ZCOUNT', scores, old, old) == 0 then
      if redis.call('ZREM', distinct, score_name(old)) == 1 and seal
          and redis.call('HEXISTS', seal, 'dcard') == 1 then
        redis.call('HINCRBY', seal, 'dcard', -1)
      end
    end
  end
  if new ~= nil then
    if redis.call('ZADD', distinct, new, score_name(new)) == 1 and seal
        and redis.call('HEXISTS', seal, 'dcard') == 1 then
      redis.call('HINCRBY', seal, 'dcard', 1)
    end
  end
end

-- Sets (`meta` a JSON text) or removes (`meta` '') a user's metadata in `metadata` (:x),
-- keeping the seal's xcard (the fields :x holds) true where it exists, so a read sees an :x
-- that was lost, evicted or emptied; `seal` is the live generation's seal, else nil. A seal
-- written before xcard existed has none, and is not checked for it until a rebuild.
local function move_metadata(metadata, seal, user, meta)
  local delta
  if meta == '' then
    delta = -redis.call('HDEL', metadata, user)
  else
    delta = redis.call('HSET', metadata, user, meta)
  end
  if delta ~= 0 and seal and redis.call('HEXISTS', seal, 'xcard') == 1 then
    redis.call('HINCRBY', seal, 'xcard', delta)
  end
end

-- Calls `cmd` on `key` with the items of `list` as arguments, `step` arguments an item, in
-- slices (Lua's unpack is bounded by its stack, and a chunk may hold 100,000 rows), and
-- answers the replies of all the slices as one list when the command answers one.
local function call_sliced(cmd, key, list, step)
  local out = {}
  local per_call = 500 * step
  for first = 1, #list, per_call do
    local reply = redis.call(cmd, key, unpack(list, first, math.min(first + per_call - 1, #list)))
    if type(reply) == 'table' then
      for i = 1, #reply do
        out[#out + 1] = reply[i]
      end
    end
  end
  return out
end
