-- Every board id the run's database holds entries or events of, as stored: the boards, and the
-- periods of a board that resets (`<board>~<period id>`), which the chaos check compares one by
-- one as boards of their own. A run's tables are small (one event per accepted command).
SELECT board_id FROM user_scores
UNION
SELECT board_id FROM score_events
