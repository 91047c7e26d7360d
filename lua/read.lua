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
-- Reply: { seal, reply } with seal = { HGET :m card, ZCARD :z, HLEN :v, HGET :m dcard,
-- ZCARD :d, HGET :m xcard, HLEN :x } (read.rs judges it) and, for a page (offset, after, around):
--   { start (0-based position of the first row), better (entries with a strictly better tuple
--     than the first row's: score, then the other columns on a board with columns),
--     dense_better (distinct such tuples; 0 unless asked), found (around: 0 when the user is
--     not on the board), members and scores (flat), metadata (one per row) }
-- and for users, one { score, stored :v value, position, better, dense_better, metadata } per
-- id, score false for an id not on the board.
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

-- Members of `key` (:z, or :d for dense ranks) strictly ahead of `member` at `score`: by
-- score alone on a one-column board (ZCOUNT), by score and tuple on a board with columns
-- (members.lua's `tuples_ahead`: members at equal scores are ordered by their tuples).
local function better(key, score, member)
  local tuple = tuple_of(member)
  if tuple then
    return tuples_ahead(key, score, tuple, desc)
  end
  if desc then
    return redis.call('ZCOUNT', key, '(' .. score, '+inf')
  end
  return redis.call('ZCOUNT', key, '-inf', '(' .. score)
end

local function range(start, stop)
  if desc then
    return redis.call('ZRANGE', z, start, stop, 'REV', 'WITHSCORES')
  end
  return redis.call('ZRANGE', z, start, stop, 'WITHSCORES')
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

local seal = {
  redis.call('HGET', m, 'card') or false,
  redis.call('ZCARD', z),
  redis.call('HLEN', v),
  redis.call('HGET', m, 'dcard') or false,
  redis.call('ZCARD', d),
  redis.call('HGET', m, 'xcard') or false,
  redis.call('HLEN', x),
}

local function metadata(users)
  if #users == 0 then
    return {}
  end
  local values = redis.call('HMGET', x, unpack(users))
  for i = 1, #users do
    values[i] = values[i] or false
  end
  return values
end

if what == 'users' then
  local rows = {}
  local users = {}
  for i = 4, #ARGV do
    local user = ARGV[i]
    local member, stored = member_for(user)
    local score = redis.call('ZSCORE', z, member)
    if score then
      rows[#rows + 1] = {score, stored, position(member), better(z, score, member),
        dense and better(d, score, member) or 0, false}
      users[#users + 1] = user
    else
      rows[#rows + 1] = {false, false, false, false, false, false}
    end
  end
  local meta = metadata(users)
  local j = 0
  for i = 1, #rows do
    if rows[i][1] then
      j = j + 1
      rows[i][6] = meta[j]
    end
  end
  return {seal, rows}
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
    return {seal, {0, 0, 0, 0, {}, {}}}
  end
  start = math.max(0, at - count)
  stop = at + count
end

local page = {}
if count > 0 or what == 'around' then
  page = range(start, stop)
end
local users = {}
for i = 1, #page, 2 do
  users[#users + 1] = user_of(page[i])
end
local first_better, first_dense = 0, 0
if #page > 0 then
  first_better = better(z, page[2], page[1])
  if dense then
    first_dense = better(d, page[2], page[1])
  end
end
return {seal, {start, first_better, first_dense, found, page, metadata(users)}}
