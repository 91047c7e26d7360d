#!lua
-- The prelude of the scripts that check their keys' types (project.lua, repair.lua,
-- remove_orphan.lua). Redis has no include: scripts.rs sends each of them as this text followed
-- by the script's own, one body with one SHA1. The `#!lua` line above (Redis 7) is therefore
-- the first line of each: it makes Redis refuse the whole call with OOM before it runs when
-- memory is full, so no call ever writes half.

-- Fail-closed type check: the error text for `key` when it exists with another type than
-- `expected`, else nil.
local function wrong_type(key, expected)
  local actual = redis.call('TYPE', key)['ok']
  if actual ~= 'none' and actual ~= expected then
    return 'LBWRONGTYPE ' .. key .. ' is a ' .. actual .. ', expected a ' .. expected
  end
  return nil
end


