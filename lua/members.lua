-- Shared by the scripts that touch members (scripts.rs puts it after prelude.lua, or after a
-- read script's own `#!lua flags=no-writes` line): how a member and a versions-hash value are
-- spelt (member.rs), and the distinct-scores set that dense ranks count. It has no `#!lua`
-- line: the first line of the whole text carries the flags.

-- Byte order of two strings (never Lua's `<`, which uses the server's collation locale).
local function bytes_less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local p, q = string.byte(a, i), string.byte(b, i)
    if p ~= q then
      return p < q
    end
  end
  return #a < #b
end

-- How a member is spelt (member.rs): the user id alone on one-column boards whose ties go by
-- user id (`key` ''), "\1", the 16-digit tie key and the user id on one-column earliest
-- boards, and "\2", the key (column count, other columns, tie) and the user id on boards with
-- columns. Byte order of members is then the database's order of (col2, col3, tie, user_id).
local function member_of(user, key)
  if key == nil or key == '' then
    return user
  end
  if #key == 16 then
    return '\1' .. key .. user
  end
  return '\2' .. key .. user
end

-- Whether `key` is one member.rs's `key_text` writes: '', 16 hex digits, or a column count
-- (2 or 3) and that many groups of 16.
local function key_ok(key)
  if key == '' then
    return true
  end
  if #key == 16 then
    return string.match(key, '^%x+$') ~= nil
  end
  local n = tonumber(string.sub(key, 1, 1))
  return (n == 2 or n == 3) and #key == 1 + 16 * n
    and string.match(string.sub(key, 2), '^%x+$') ~= nil
end

-- The version and key ('' for none) of a versions-hash value, '<version>' or
-- '<version>:<key>' (member.rs's `stored`); nil when it is neither.
local function parse_stored(value)
  local version = tonumber(value)
  if version then
    return version, ''
  end
  local v, key = string.match(value, '^(%d+):(%x+)$')
  if v and key_ok(key) then
    return tonumber(v), key
  end
  return nil
end

-- A versions-hash value (member.rs's `stored`): '<version>', or '<version>:<key>'.
local function stored_of(version, key)
  if key == '' then
    return version
  end
  return version .. ':' .. key
end

-- The user id a member spells (member.rs's `user_of`): after the mark and the key, or the
-- whole member.
local function user_of(member)
  local mark = string.byte(member, 1)
  if mark == 1 then
    return string.sub(member, 18)
  end
  if mark == 2 then
    local n = tonumber(string.sub(member, 2, 2)) or 0
    return string.sub(member, 3 + 16 * n)
  end
  return member
end

-- The tuple a member of a board with columns ranks by: its spelling up to the tie (the mark,
-- the column count and the other columns); nil for a one-column board's member, which ranks
-- by its score alone.
local function tuple_of(member)
  if string.byte(member, 1) ~= 2 then
    return nil
  end
  local n = tonumber(string.sub(member, 2, 2)) or 1
  return string.sub(member, 1, 2 + 16 * (n - 1))
end

-- A score as the distinct-scores set names it: the integer in decimal, whatever spelling
-- Redis used for the double (ZSCORE may answer '1e+15' on some versions).
local function score_name(score)
  return string.format('%d', tonumber(score))
end

-- The member of the distinct set (:d, dense ranks) that stands for `member` at `score`: the
-- score's name on one-column boards; on boards with columns the member's tuple followed by the
-- score's name (a :d member is unique per tuple and score; members at one score share the
-- suffix, so they sort by their tuples).
local function distinct_name(score, member)
  local tuple = tuple_of(member)
  if tuple then
    return tuple .. score_name(score)
  end
  return score_name(score)
end

-- Compares the first #prefix bytes of `member` with `prefix`: -1, 0 or 1.
local function compare_prefix(member, prefix)
  local head = string.sub(member, 1, #prefix)
  if head == prefix then
    return 0
  end
  if bytes_less(head, prefix) then
    return -1
  end
  return 1
end

-- Where the members of sorted set `key` at `score` whose spelling starts with `prefix` are,
-- in forward (ZRANGE) positions: the block of members at the score is [first, last), and
-- within it those members are [lower, upper). Binary searches of the block, ordered by member
-- bytes: a few ZRANGE calls of one member each.
local function prefix_range(key, score, prefix)
  local first = redis.call('ZCOUNT', key, '-inf', '(' .. score)
  local last = first + redis.call('ZCOUNT', key, score, score)
  local function search(lo, hi, past_equal)
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local c = compare_prefix(redis.call('ZRANGE', key, mid, mid)[1], prefix)
      if c < 0 or (past_equal and c == 0) then
        lo = mid + 1
      else
        hi = mid
      end
    end
    return lo
  end
  local lower = search(first, last, false)
  local upper = search(lower, last, true)
  return first, last, lower, upper
end

-- Members of `key` strictly ahead of a member whose tuple (tuple_of) is `tuple` at `score`,
-- on a board read in direction `desc`: a better score, or the same score and a better tuple.
-- For the board's members (:z) and its distinct tuples (:d) alike.
local function tuples_ahead(key, score, tuple, desc)
  local _, last, lower, upper = prefix_range(key, score, tuple)
  if desc then
    return redis.call('ZCOUNT', key, '(' .. score, '+inf') + (last - upper)
  end
  -- Every member before the block has a smaller score, and within it before `lower` a
  -- smaller tuple.
  return lower
end

-- Whether some member of `scores` stands at `score` with the tuple `member` ranks by (on a
-- one-column board, any member at the score).
local function holds_tuple(scores, score, member)
  local tuple = tuple_of(member)
  if not tuple then
    return redis.call('ZCOUNT', scores, score, score) > 0
  end
  local _, _, lower, upper = prefix_range(scores, score, tuple)
  return upper > lower
end

-- The distinct set (:d) a generation keeps, or nil when it keeps none: only boards read with
-- dense ranks keep one (a live seal with `dcard`; a build whose seal says `dense`,
-- generation.rs), as it doubles the sorted-set work of every write. `seal` is a seal key,
-- `field` the field that marks it ('dcard' live, 'dense' for a build).
local function distinct_kept(seal, field, distinct)
  if seal and redis.call('HEXISTS', seal, field) == 1 then
    return distinct
  end
  return nil
end

-- Keeps a board's distinct set (:d, for dense ranks) true after one member of `scores`
-- went from `old_member` at score `old` (nil: it was not there) to `new_member` at `new` (nil:
-- it was removed); call it after the ZADD or ZREM. `distinct` is nil when the generation keeps
-- no :d (distinct_kept): then nothing is done. `seal` is the board's seal key when its dcard
-- must follow (the live generation, whose seal has dcard whenever it keeps :d), else nil.
local function move_distinct(scores, distinct, seal, old, old_member, new, new_member)
  if distinct == nil then
    return
  end
  if old ~= nil then
    local name = distinct_name(old, old_member)
    if new == nil or name ~= distinct_name(new, new_member) then
      if not holds_tuple(scores, old, old_member) then
        if redis.call('ZREM', distinct, name) == 1 and seal then
          redis.call('HINCRBY', seal, 'dcard', -1)
        end
      end
    end
  end
  if new ~= nil then
    if redis.call('ZADD', distinct, new, distinct_name(new, new_member)) == 1 and seal then
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
-- answers the replies of all the slices as one list when the command answers one. `first`
-- and `last` (default: the whole list) bound the part of `list` that is sent, so a script can
-- send a section of its own ARGV without copying it (rebuild_chunk.lua).
local function call_sliced(cmd, key, list, step, first, last)
  local out = {}
  local per_call = 500 * step
  last = last or #list
  for from = first or 1, last, per_call do
    local reply = redis.call(cmd, key, unpack(list, from, math.min(from + per_call - 1, last)))
    if type(reply) == 'table' then
      for i = 1, #reply do
        out[#out + 1] = reply[i]
      end
    end
  end
  return out
end
