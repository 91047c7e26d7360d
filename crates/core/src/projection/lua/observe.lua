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

local out = {}
for i, user in ipairs(ARGV) do
  local stored = redis.call('HGET', KEYS[2], user)
  local key = ''
  if stored then
    local version, stored_key = parse_stored(stored)
    if version then
      key = stored_key
    end
  end
  out[3 * i - 2] = stored or false
  out[3 * i - 1] = redis.call('ZSCORE', KEYS[1], member_of(user, key)) or false
  out[3 * i] = redis.call('HGET', KEYS[3], user) or false
end
return out
