-- The users banned now: the chaos check compares them with the run's last ban or unban of each.
SELECT user_id
FROM banned_users
