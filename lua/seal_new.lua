-- Seals the empty projection of a board PostgreSQL has just created (a competition's cohort,
-- opened by its first entry: competition/sql/functions/lb_competition_enter.sql), so its first
-- reads find it whole instead of falling back to PostgreSQL until a rebuild. Sent after
-- prelude.lua (scripts.rs): its `#!lua` line makes Redis refuse the call under OOM.
--
-- Safe only because the caller knows the board had no row when it was created (the entry that
-- opened the cohort committed before any score could land in it): a row committed since is
-- either already applied, and then its keys are here and nothing is sealed (a read asks for a
-- rebuild, the slow path), or not applied yet, and then it is applied onto the seal and
-- counted (project.lua), as on any sealed board.
--
-- KEYS[1] scores, KEYS[2] versions, KEYS[3] distinct scores, KEYS[4] metadata, KEYS[5]
-- tombstones, KEYS[6] the rebuild's seal (a build in progress), KEYS[7] the board's seal.
-- ARGV[1] the generation id, ARGV[2] built_at (ms), ARGV[3] the board's order
-- (model/order.rs's `Order::encode`).
--
-- Answers 'sealed', or 'exists' when any of the board's keys exists (nothing written).

for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return 'exists'
  end
end
redis.call('HSET', KEYS[7], 'gen', ARGV[1], 'built_at', ARGV[2], 'card', 0, 'dcard', 0,
  'xcard', 0, 'order', ARGV[3])
return 'sealed'
