-- Extends a lock only while it is still ours (compare-and-renew). No `#!lua` line on purpose:
-- without one Redis lets the script run when memory is full (PEXPIRE needs no memory), so the
-- lock holder can still renew during an OOM.
-- KEYS[1] lock, ARGV[1] our token, ARGV[2] TTL in milliseconds. Answers 1 (renewed) or 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
