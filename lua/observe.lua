-- What the projection holds for each of a list of users, in one snapshot: the versions hash's
-- value, the score of the member that value names (member.rs), so that a member whose tie
-- key is in its name is found from its user id alone, and the member's metadata. Sent after a `#!lua flags=no-writes` line
-- and members.lua (scripts.rs: `read_only!`): `parse_stored`, `member_of`.
--
-- KEYS[1] board scores (sorted set), KEYS[2] board versions (hash), KEYS[3] board metadata
-- (hash); ARGV the user ids.
-- Answers, for each user in order, its stored value, its score and its metadata (JSON text as
-- the projection wrote it), each nil when absent. A
-- stored value that is not one member.rs writes is answered as it is, with the score of the
-- member spelt as the user id alone (what a board with ties by user id would hold).

-- Three bulk reads whatever the number of users (HMGET, HMGET, ZMSCORE), not three calls each.

local stored = call_sliced('HMGET', KEYS[2], ARGV, 1)
local metadata = call_sliced('HMGET', KEYS[3], ARGV, 1)
local members = {}
for i, user in ipairs(ARGV) do
  local key = ''
  if stored[i] then
    local version, stored_key = parse_stored(stored[i])
    if version then
      key = stored_key
    end
  end
  members[i] = member_of(user, key)
end
local scores = call_sliced('ZMSCORE', KEYS[1], members, 1)
local out = {}
for i = 1, #ARGV do
  out[3 * i - 2] = stored[i]
  out[3 * i - 1] = scores[i]
  out[3 * i] = metadata[i]
end
return out
