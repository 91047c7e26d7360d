-- Deletes a lock only while it is still ours (compare-and-release).
-- KEYS[1] lock, ARGV[1] our token. Answers 1 (released) or 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
