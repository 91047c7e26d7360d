-- Every leaderboard read of one board from the projection, as one script: one round trip and
-- one snapshot (no projection script runs between its reads), read-only (scripts.rs puts the
-- `no-writes` flag and members.lua in front).
--
-- KEYS: 1 :z scores, 2 :v versions, 3 :m seal, 4 :d distinct scores, 5 :x metadata
-- ARGV: 1 'desc' or 'asc' (the board's sort), 2 what: 'offset', 'after', 'around' or 'users',
--       3 '1' to count distinct better scores (dense ranks), then per read:
--       offset: 4 count, 5 offset
--       after:  4 count, 5 cursor score, 6 cursor member (member.rs's spelling)
--       around: 4 radius, 5 user id
--       users:  4.. user ids
--
-- Reply: { seal, ... } with seal one string of seven fields, spaces between: ":m card, ZCARD :z,
-- HLEN :v, :m dcard, ZCARD :d (0 unless dense ranks were asked), :m xcard, HLEN :x", '-' for a
-- field :m lacks and 'x' for one that is not a count (read.rs judges it); then for a page
-- (offset, after, around):
--   'start better dense_better found' (start: 0-based position of the first row; better:
--   entries with a strictly better tuple than the first row's: score, then the other columns
--   on a board with columns; dense_better: distinct such tuples, 0 unless asked; found: 0 for
--   an around of a user not on the board), members and scores (flat), metadata (one per row,
--   or none at all on a board without metadata)
-- and for users, one string for all the ids (below).
-- Counts and a users read's ids travel as strings, not one reply value each: the api parses
-- every reply value through the redis crate's parser, which took 8% of its CPU on `users/{id}`
-- when a read's 17 values were separate (2 now).
--
-- Members are compared byte by byte (`bytes_less`), never with Lua's `<`, which uses the
-- server's collation locale.

local z, v, m, d, x = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local desc = ARGV[1] == 'desc'
local what = ARGV[2]
local dense = ARGV[3] == '1'

local function position(member)
  if desc then
    return redis.call('ZREVRANK', z, member)
  end
  return redis.call('ZRANK', z, member)
end

local function range(start, stop)
  if desc then
    return redis.call('ZRANGE', z, start, stop, 'REV', 'WITHSCORES')
  end
  return redis.call('ZRANGE', z, start, stop, 'WITHSCORES')
end

-- How far back from a member's place `better` probes for the start of its group of equal
-- tuples (a board with columns) before it hands over to the binary search of its whole block
-- of equal scores (members.lua's `tuples_ahead`): groups are short on most boards, and
-- `users?ids=` pays this for each of 100 members in one script.
local WINDOW = 8

-- Whether the member at read position `p` holds `score` and `tuple`.
local function in_group(p, score, tuple)
  local row = range(p, p)
  return row[1] ~= nil and tonumber(row[2]) == tonumber(score)
    and compare_prefix(row[1], tuple) == 0
end

-- Members of :z strictly ahead of `member`, at read position `at` and `score`: by score alone
-- on a one-column board (ZCOUNT); on a board with columns the start of its group of equal
-- tuples (equal score, equal tuple: its competition rank - 1). One member at a time, 1, 2, 4
-- and 8 places back until a member outside the group, then a binary search between the two;
-- a group longer than that takes `tuples_ahead`. (Measured on 100,000 members: `users?ids=`
-- of 100 ran at 0.19 of a one-column board's rate with the binary search alone, and at 0.37
-- reading the 8 members before each one in one ZRANGE; most members are alone in their group,
-- and then one probe of one member answers.)
local function better(member, at, score)
  local tuple = tuple_of(member)
  if not tuple then
    if desc then
      return redis.call('ZCOUNT', z, '(' .. score, '+inf')
    end
    return redis.call('ZCOUNT', z, '-inf', '(' .. score)
  end
  -- `equal`: the earliest position known to be in the group; `outside`: a position before it
  -- known not to be.
  local equal, outside = at, nil
  local step = 1
  while outside == nil do
    if equal == 0 then
      return 0
    end
    local p = math.max(0, at - step)
    if in_group(p, score, tuple) then
      equal = p
      if step >= WINDOW and p > 0 then
        return tuples_ahead(z, score, tuple, desc)
      end
      step = step * 2
    else
      outside = p
    end
  end
  local lo, hi = outside + 1, equal
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if in_group(mid, score, tuple) then
      hi = mid
    else
      lo = mid + 1
    end
  end
  return lo
end

-- Distinct tuples (scores, on a one-column board) strictly ahead of `member` at `score`, for
-- dense ranks: on a board with columns the rank of its tuple in :d (members.lua's
-- `distinct_name`; the binary search when :d lacks it, which the seal's dcard then flags).
local function dense_better(member, score)
  local tuple = tuple_of(member)
  if not tuple then
    if desc then
      return redis.call('ZCOUNT', d, '(' .. score, '+inf')
    end
    return redis.call('ZCOUNT', d, '-inf', '(' .. score)
  end
  local rank
  if desc then
    rank = redis.call('ZREVRANK', d, distinct_name(score, member))
  else
    rank = redis.call('ZRANK', d, distinct_name(score, member))
  end
  return rank or tuples_ahead(d, score, tuple, desc)
end

-- Whether `a` comes after `b` in the board's order, at equal scores.
local function member_after(a, b)
  if desc then
    return bytes_less(a, b)
  end
  return bytes_less(b, a)
end

-- The member a user id is held at: its key is in its versions-hash value.
local function member_for(user)
  local stored = redis.call('HGET', v, user)
  if stored then
    local _, key = parse_stored(stored)
    return member_of(user, key), stored
  end
  return user, false
end

-- The seal's three counts in one HMGET, and :d counted only for a dense read (no other read
-- judges it): 4 or 5 calls where 7 were, on every read. (Measured: `users/{id}` made 12 calls,
-- 7 of them the seal, and spent 2 x redis-benchmark's Redis CPU on its ZSCORE + ZREVRANK.)
local counts = redis.call('HMGET', m, 'card', 'dcard', 'xcard')
local xlen = redis.call('HLEN', x)
-- A seal field as the reply spells it: a count as it is, '-' when :m lacks it, and 'x' for
-- anything else (edited by hand), which read.rs judges broken as it judges any unparsable count.
local function field(s)
  if not s then
    return '-'
  end
  if string.find(s, '^%d+$') then
    return s
  end
  return 'x'
end
local seal = string.format('%s %d %d %s %d %s %d', field(counts[1]), redis.call('ZCARD', z),
  redis.call('HLEN', v), field(counts[2]), dense and redis.call('ZCARD', d) or 0,
  field(counts[3]), xlen)

-- Each user's metadata JSON, false for none. A board without metadata (HLEN :x is 0, read
-- with the seal) skips the lookup, and answers no value at all rather than one false per row:
-- one call fewer on most boards' reads, and no reply values for the api to parse.
local function metadata(users)
  if #users == 0 or xlen == 0 then
    return {}
  end
  local values = redis.call('HMGET', x, unpack(users))
  for i = 1, #users do
    values[i] = values[i] or false
  end
  return values
end

-- Appends s to out from position n + 1 as '<bytes> <s>', or '-' for none; returns the new
-- length. A length rather than a separator: a stored version or metadata written by hand may
-- hold any byte (reply.rs reads it).
local function sized(out, n, s)
  if s then
    out[n + 1] = #s
    out[n + 2] = ' '
    out[n + 3] = s
    return n + 3
  end
  out[n + 1] = '-'
  return n + 1
end

if what == 'users' then
  -- One string for every id (reply.rs reads it), in the order asked: an empty line for an id
  -- not on the board (a score may start with '-'), else 'score position better dense_better ',
  -- the stored :v value and the metadata each as '<bytes> <value>' or '-', a space between,
  -- and a newline.
  local rows = {}
  local users = {}
  for i = 4, #ARGV do
    local user = ARGV[i]
    local member, stored = member_for(user)
    local score = redis.call('ZSCORE', z, member)
    if score then
      local at = position(member)
      rows[#rows + 1] = {string.format('%s %d %d %d ', score, at, better(member, at, score),
        dense and dense_better(member, score) or 0), stored}
      users[#users + 1] = user
    else
      rows[#rows + 1] = false
    end
  end
  local meta = metadata(users)
  local out, n, j = {}, 0, 0
  for i = 1, #rows do
    local row = rows[i]
    if row then
      j = j + 1
      out[n + 1] = row[1]
      n = sized(out, n + 1, row[2])
      out[n + 1] = ' '
      n = sized(out, n + 1, meta[j])
      out[n + 1] = '\n'
    else
      out[n + 1] = '\n'
    end
    n = n + 1
  end
  return {seal, table.concat(out)}
end

local count = tonumber(ARGV[4])
local start, stop
local found = 1
if what == 'offset' then
  start = tonumber(ARGV[5])
  stop = start + count - 1
elseif what == 'after' then
  local score, member = ARGV[5], ARGV[6]
  local current = redis.call('ZSCORE', z, member)
  if current and tonumber(current) == tonumber(score) then
    start = position(member) + 1
  else
    -- The cursor's member moved or left: its place is inside the block of equal scores,
    -- positions [a, a + n), ordered by member; find the first member after it there.
    local lo
    if desc then
      lo = redis.call('ZCOUNT', z, '(' .. score, '+inf')
    else
      lo = redis.call('ZCOUNT', z, '-inf', '(' .. score)
    end
    local hi = lo + redis.call('ZCOUNT', z, score, score)
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if member_after(range(mid, mid)[1], member) then
        hi = mid
      else
        lo = mid + 1
      end
    end
    start = lo
  end
  stop = start + count - 1
else
  local member = member_for(ARGV[5])
  local at = position(member)
  if not at then
    return {seal, '0 0 0 0', {}, {}}
  end
  start = math.max(0, at - count)
  stop = at + count
end

local page = {}
if count > 0 or what == 'around' then
  page = range(start, stop)
end
-- The rows' user ids name their metadata, so a board without metadata (xlen 0) spells none:
-- 100 calls of `user_of` were a tenth of Redis's CPU on a top-100 page (docs/performance.md,
-- runs E1-E4).
local users = {}
if xlen > 0 then
  for i = 1, #page, 2 do
    users[#users + 1] = user_of(page[i])
  end
end
local first_better, first_dense = 0, 0
if #page > 0 then
  first_better = better(page[1], start, page[2])
  if dense then
    first_dense = dense_better(page[1], page[2])
  end
end
-- The rows stay a flat array of members and scores: packing them into one string (as the
-- users read is) saved the api about 1 us per row but cost this script 0.7-1.2 us per row in
-- Lua, and Redis's one thread is the scarcer: api processes scale out, a Redis does not.
return {seal, string.format('%d %d %d %d', start, first_better, first_dense, found), page,
  metadata(users)}
