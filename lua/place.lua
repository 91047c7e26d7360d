
-- Shared by the scripts that write members (after prelude.lua and members.lua, scripts.rs):
-- puts one user's member at an absolute score, version and tie key in one generation of a
-- board's keys, keeping its distinct-scores set and metadata hash true.
--
-- scores, versions, distinct, metadata: the generation's :z, :v, :d, :x keys (distinct nil
-- when the generation keeps no :d, distinct_kept); seal: its seal when dcard and xcard must
-- follow (the live generation), else nil; user, score, version; key:
-- the member's key (member.rs's `key_text`: '' for a one-column board's tie 0); meta: the
-- entry's metadata as JSON text ('' for none); old_key: the key the versions hash held for the
-- user (nil when it held nothing, or nothing readable: the member is then looked for under the
-- new spelling only).
--
-- Answers ZADD's and HSET's counts of new entries, so the caller can tell a member new to both
-- halves (one more for the seal's card) from one whose spelling changed (none more).
local function place_member(scores, versions, distinct, metadata, seal, user, score, version,
                            key, meta, old_key)
  local member = member_of(user, key)
  local old_member = member
  if old_key ~= nil then
    old_member = member_of(user, old_key)
  end
  local old_score = redis.call('ZSCORE', scores, old_member)
  if old_member ~= member then
    redis.call('ZREM', scores, old_member)
    if not old_score then
      -- The versions hash named another spelling that is gone: maybe the member is under the
      -- new one already (a repair of the hash alone).
      old_score = redis.call('ZSCORE', scores, member)
      old_member = member
    end
  end
  local added = redis.call('ZADD', scores, score, member)
  local added_version = redis.call('HSET', versions, user, stored_of(version, key))
  move_metadata(metadata, seal, user, meta)
  move_distinct(scores, distinct, seal, old_score or nil, old_member, score, member)
  return added, added_version
end

-- Takes one user's member out of one generation of a board's keys (a hidden or erased member,
-- project.lua): its member under the spelling `key` names ('' or nil: the user id alone), its
-- version and its metadata, keeping the distinct scores (and, given `seal`, dcard and xcard)
-- true.
-- Answers ZREM's and HDEL's counts, so the caller can tell a member that was whole (one fewer
-- for the seal's card) from one that had lost a half.
local function take_out(scores, versions, distinct, metadata, seal, user, key)
  local member = member_of(user, key)
  local old_score = redis.call('ZSCORE', scores, member)
  local removed = 0
  if old_score then
    removed = redis.call('ZREM', scores, member)
    move_distinct(scores, distinct, seal, old_score, member, nil, nil)
  end
  local removed_version = redis.call('HDEL', versions, user)
  move_metadata(metadata, seal, user, '')
  return removed, removed_version
end
