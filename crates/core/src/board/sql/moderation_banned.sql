-- Whether a user is banned (the console's look at one player): one probe of banned_users'
-- primary key. $1 user.
SELECT EXISTS (SELECT 1 FROM banned_users WHERE user_id = $1) AS banned
