-- The first N of one board and its change sequence, in one snapshot, for the projector's
-- `rank.top_changed` events (crates/core/src/projection/top.rs). Read-only (scripts.rs puts the
-- `no-writes` flag and members.lua in front). The projector sends one call per board right
-- after the board's lua/project.lua call, in the batch's one pipelined round trip, so the read
-- costs no round trip of its own; another projector's call may run between the two, and this
-- read then shows both changes, with the sequence that says so.
--
-- KEYS: 1 :z scores, 2 :v versions, 3 :m seal, 4 :x metadata, 5 :q change sequence
-- ARGV: 1 N (the number of entries)
--
-- Reply: { sequence (GET :q, false when absent), seal = { HGET :m card, ZCARD :z, HLEN :v,
-- HGET :m xcard, HLEN :x } (read.rs's `seal` judges it), order (HGET :m order, false when the
-- seal has none), members and scores (flat; empty without a seal: a board that is not known to
-- be whole has no first N worth reporting) }.
--
-- The direction is the seal's (`order` starts with the sort; a seal written before it carried
-- the order is descending, the only kind then), so the projector needs no definition.

local z, v, m, x, q = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local n = tonumber(ARGV[1]) or 0
local order = redis.call('HGET', m, 'order')
local seal = {
  redis.call('HGET', m, 'card'), redis.call('ZCARD', z), redis.call('HLEN', v),
  redis.call('HGET', m, 'xcard'), redis.call('HLEN', x)
}
local rows = {}
if seal[1] and n > 0 then
  if order and string.sub(order, 1, 10) == 'ascending:' then
    rows = redis.call('ZRANGE', z, 0, n - 1, 'WITHSCORES')
  else
    rows = redis.call('ZRANGE', z, 0, n - 1, 'REV', 'WITHSCORES')
  end
end
return { redis.call('GET', q), seal, order, rows }
