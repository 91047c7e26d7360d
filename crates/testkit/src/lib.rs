//! Test fixtures on the real servers: a database of the test's own (created, dropped when the
//! fixture drops) and a Redis namespace of its own (its keys deleted when it drops). Tests run
//! in parallel and share the machine's PostgreSQL and Redis with CI and other tests, so nothing
//! here ever flushes a whole Redis or touches another test's database.
//!
//! The servers are found at `LEDGERBOARD_TEST_DATABASE_URL` (an admin connection, default
//! `postgres://postgres@127.0.0.1:5432/postgres`) and `LEDGERBOARD_TEST_REDIS_URL` (default
//! `redis://127.0.0.1:6379`).

mod db;
mod env;
mod pgbouncer;
mod process;
mod redis;
mod scrape;
mod seed;
pub mod stack;
pub mod tls;

pub use db::*;
pub use env::TestEnv;
pub use ledgerboard_harness::{PostgresServer, env_refs};
pub use pgbouncer::PgBouncer;
pub use process::*;
pub use redis::*;
pub use scrape::Scrape;
pub use seed::*;

pub(crate) fn unique_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()
}

/// The bearer token every test daemon and router accepts (scope `admin`).
pub const TEST_TOKEN: &str = "ledgerboard-test-token";

/// `auth.tokens` for tests: [`TEST_TOKEN`] with the `admin` scope.
pub fn test_tokens() -> String {
    format!(
        "tests={}@admin",
        ledgerboard_core::auth::hash_token(TEST_TOKEN)
    )
}

/// The default settings pointed at `database_url` and at the test's own Redis namespace, with
/// [`test_tokens`] and `extra` (environment names, e.g. `LEDGERBOARD__SHUTDOWN__GRACE_MS`), set
/// by name as the environment would, so each applies where `D` has its section: for a router
/// or daemon built in process. Left at the defaults, a test would share Redis namespace
/// `ledgerboard` (the one `just up` uses) with every other such test.
pub fn settings_for<D: ledgerboard_core::config::DaemonSection>(
    database_url: &str,
    redis: &TestRedis,
    extra: &[(&str, &str)],
) -> ledgerboard_core::config::Settings<D> {
    let mut values = ledgerboard_core::config::env_map(extra);
    // `extra` may set its own tokens.
    values
        .entry("LEDGERBOARD__AUTH__TOKENS".to_owned())
        .or_insert_with(test_tokens);
    let mut settings = ledgerboard_core::config::read_from::<D>(None, Some(values))
        .expect("the test values load")
        .settings;
    settings.database.url = database_url.into();
    settings.redis.url = redis.url.as_str().into();
    settings.redis.namespace = redis.namespace.clone();
    settings
}

pub use ledgerboard_harness::wait::{wait_until, wait_until_blocking, wait_until_every};

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::wait_until_blocking;
    use crate::db::url_with_dbname;

    #[test]
    fn a_blocking_wait_ends_when_the_condition_holds_and_fails_at_its_deadline() {
        let mut calls = 0;
        let held = wait_until_blocking(Duration::from_secs(5), || {
            calls += 1;
            calls == 3
        });
        assert!(held.is_some_and(|d| d < Duration::from_secs(1)), "{held:?}");
        assert_eq!(calls, 3);
        let mut checks = 0;
        let never = wait_until_blocking(Duration::from_millis(100), || {
            checks += 1;
            false
        });
        assert_eq!(
            never, None,
            "a deadline that passed is None, not a silent move on"
        );
        assert!(checks >= 2, "checked again at the deadline: {checks}");
    }

    #[test]
    fn dbname_replacement() {
        assert_eq!(
            url_with_dbname("postgres://postgres@127.0.0.1:5432/postgres", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            url_with_dbname("postgres://u:p@h/postgres?sslmode=disable", "x"),
            "postgres://u:p@h/x?sslmode=disable"
        );
        assert_eq!(
            url_with_dbname("postgres://h:5432", "x"),
            "postgres://h:5432/x"
        );
    }
}
