//! Child processes for the runs that exercise ledgerboard as it is deployed: the daemons as
//! processes ([`Daemon`]), a redis-server of the run's own ([`RedisServer`], plain or TLS-only)
//! and a PostgreSQL cluster of its own ([`PostgresServer`]), which a run may stop, restart,
//! flush or reconfigure without touching anyone else's data, the one HTTP/1.1 client
//! ([`http`]) that talks to them (with a reader of server-sent events over it, [`sse`]), and a
//! small load balancer ([`Proxy`]) for rolling restarts.
//! `lbchaos experiment`, `lbchaos chaos` and the tests
//! (through the testkit) use them. The console's browser tests drive a headless chromium
//! through chromedriver ([`Browser`]), with a small WebDriver client of the harness's own.

pub mod browser;
mod daemon;
pub mod http;
mod postgres_server;
mod proxy;
mod redis_cluster;
mod redis_server;
pub mod sse;
pub mod wait;

pub use browser::{Browser, Element};
pub use daemon::{Daemon, binary_beside_current_exe};
pub use postgres_server::PostgresServer;
pub use proxy::{Backend, Proxy};
pub use redis_cluster::{NodeInfo, RedisCluster};
pub use redis_server::{RedisServer, RedisTls};

/// A local port free at the time of the call, and released: whoever binds it later may find
/// it taken. The one copy of this helper; its callers make up for the race. A daemon is given
/// `127.0.0.1:0` and the address it logs is read instead (the testkit's
/// `Process::wait_for_addr`); a `RedisServer` retries on another port when it cannot bind.
pub fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// An owned environment as the borrowed pairs [`Daemon::start`] takes.
pub fn env_refs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

fn unique_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()
}
