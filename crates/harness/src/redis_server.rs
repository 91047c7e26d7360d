use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How many ports [`RedisServer::start_with_fresh`] tries before giving up.
pub const START_ATTEMPTS: u32 = 5;

/// A redis-server of the caller's own on a free port, with its data in a temporary folder.
/// `stop` saves the data and `restart` loads it; `crash` loses it. Dropping it kills the
/// server and deletes the folder.
pub struct RedisServer {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
    extra: Vec<String>,
    tls: Option<RedisTls>,
}

/// A TLS-only server: `port` is its `--tls-port` and the plain port is off (`--port 0`).
#[derive(Clone, Debug)]
pub struct RedisTls {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// The CA that client certificates must chain to, and that this harness trusts.
    pub ca_file: PathBuf,
    /// `--tls-auth-clients yes`: a client without a certificate is refused.
    pub require_client_cert: bool,
    /// The certificate and key the harness's own connections present.
    pub client_cert_file: PathBuf,
    pub client_key_file: PathBuf,
}

impl RedisServer {
    pub fn start() -> std::io::Result<RedisServer> {
        Self::start_with(&[])
    }

    /// With further `redis-server` arguments (for example a cluster node's).
    pub fn start_with(extra: &[String]) -> std::io::Result<RedisServer> {
        Self::start_with_fresh(|| Ok(extra.to_vec()))
    }

    /// A server that speaks only TLS, on `port` ([`RedisServer::url`] is `rediss://`).
    pub fn start_tls(tls: RedisTls) -> std::io::Result<RedisServer> {
        Self::start_inner(Some(tls), || Ok(Vec::new()))
    }

    /// [`RedisServer::start_tls`] with arguments made anew for each attempt (a TLS cluster
    /// node's).
    pub fn start_tls_with_fresh(
        tls: RedisTls,
        extra: impl Fn() -> std::io::Result<Vec<String>>,
    ) -> std::io::Result<RedisServer> {
        Self::start_inner(Some(tls), extra)
    }

    /// Like [`RedisServer::start_with`], with the arguments made anew for each attempt (a
    /// cluster node's bus port is a free port too). A port found free may be taken by someone
    /// else before redis-server binds it: then the server exits, or another server answers on
    /// it, and the start is tried again on other ports, up to [`START_ATTEMPTS`] times.
    pub fn start_with_fresh(
        extra: impl Fn() -> std::io::Result<Vec<String>>,
    ) -> std::io::Result<RedisServer> {
        Self::start_inner(None, extra)
    }

    fn start_inner(
        tls: Option<RedisTls>,
        extra: impl Fn() -> std::io::Result<Vec<String>>,
    ) -> std::io::Result<RedisServer> {
        let dir =
            std::env::temp_dir().join(format!("ledgerboard-redis-{}", super::unique_suffix()));
        std::fs::create_dir_all(&dir)?;
        let mut server = RedisServer {
            port: 0,
            dir,
            child: None,
            extra: Vec::new(),
            tls,
        };
        let mut attempt = 1;
        loop {
            server.port = super::free_port()?;
            server.extra = extra()?;
            match server.spawn() {
                Ok(()) => return Ok(server),
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && attempt < START_ATTEMPTS => {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// `--port P`, or for TLS `--port 0 --tls-port P` and the certificate files.
    fn port_args(&self) -> Vec<String> {
        let port = self.port.to_string();
        let Some(tls) = &self.tls else {
            return vec!["--port".into(), port];
        };
        let path = |p: &PathBuf| p.display().to_string();
        vec![
            "--port".into(),
            "0".into(),
            "--tls-port".into(),
            port,
            "--tls-cert-file".into(),
            path(&tls.cert_file),
            "--tls-key-file".into(),
            path(&tls.key_file),
            "--tls-ca-cert-file".into(),
            path(&tls.ca_file),
            "--tls-auth-clients".into(),
            if tls.require_client_cert { "yes" } else { "no" }.into(),
        ]
    }

    /// Starts the process on `self.port` and waits until it answers. `AddrInUse` when the
    /// server exited before answering or another server answers on the port (the port was
    /// taken after it was found free).
    fn spawn(&mut self) -> std::io::Result<()> {
        let child = Command::new("redis-server")
            .args(self.port_args())
            .args(["--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--dbfilename",
                "dump.rdb",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.extra)
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| std::io::Error::new(e.kind(), format!("start redis-server: {e}")))?;
        let pid = child.id();
        self.child = Some(child);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            let exited = self
                .child
                .as_mut()
                .is_none_or(|c| !matches!(c.try_wait(), Ok(None)));
            if exited {
                self.reap();
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    format!(
                        "redis-server on port {} exited before answering (port taken?)",
                        self.port
                    ),
                ));
            }
            match self.process_id() {
                Some(answering) if answering == pid => return Ok(()),
                Some(other) => {
                    // Someone else's server took the port: ours cannot bind it.
                    self.kill_child();
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::AddrInUse,
                        format!("port {} is served by another process ({other})", self.port),
                    ));
                }
                None => {}
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill_child();
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("redis-server on port {} did not answer", self.port),
        ))
    }

    fn connection(&self) -> Option<redis::Connection> {
        let client = match &self.tls {
            None => redis::Client::open(self.url()).ok()?,
            Some(tls) => {
                let read = |p: &PathBuf| std::fs::read(p).ok();
                redis::Client::build_with_tls(
                    self.url(),
                    redis::TlsCertificates {
                        client_tls: Some(redis::ClientTlsConfig {
                            client_cert: read(&tls.client_cert_file)?,
                            client_key: read(&tls.client_key_file)?,
                        }),
                        root_cert: Some(read(&tls.ca_file)?),
                    },
                )
                .ok()?
            }
        };
        client
            .get_connection_with_timeout(Duration::from_secs(2))
            .ok()
    }

    /// The `process_id` of the server answering on the port, if one answers.
    fn process_id(&self) -> Option<u32> {
        let mut conn = self.connection()?;
        let info: String = redis::cmd("INFO").arg("server").query(&mut conn).ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix("process_id:"))
            .and_then(|id| id.trim().parse().ok())
    }

    fn kill_child(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
        }
        self.reap();
    }

    pub fn ping(&self) -> bool {
        self.connection()
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c).ok())
            .is_some()
    }

    /// Runs one command (CONFIG SET, FLUSHALL, …) on this server.
    pub fn command(&self, args: &[&str]) -> redis::RedisResult<redis::Value> {
        let mut conn = self
            .connection()
            .ok_or_else(|| redis::RedisError::from(std::io::Error::other("no connection")))?;
        let Some((name, rest)) = args.split_first() else {
            return Err(redis::RedisError::from(std::io::Error::other("no command")));
        };
        let mut cmd = redis::cmd(name);
        for a in rest {
            cmd.arg(*a);
        }
        cmd.query(&mut conn)
    }

    /// Stops the server, saving its data to disk.
    pub fn stop(&mut self) {
        let _ = self.command(&["SHUTDOWN", "SAVE"]);
        self.reap();
    }

    /// Stops the server without saving: its data is lost (a restart comes up empty).
    pub fn crash(&mut self) {
        let _ = std::fs::remove_file(self.dir.join("dump.rdb"));
        self.kill_child();
    }

    fn reap(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port, with the data `stop` saved. The port cannot change
    /// (clients hold its URL), so a port taken meanwhile is an error (`AddrInUse`).
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.spawn()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::RedisServer;

    /// A port someone else's server holds: ours exits (it cannot bind) or the answer comes
    /// from the other process; either way the start says `AddrInUse`, so `start` moves on to
    /// another port instead of taking the other server for its own.
    #[test]
    fn a_taken_port_is_refused_not_mistaken_for_ours() {
        let holder = RedisServer::start().expect("a redis-server");
        let dir =
            std::env::temp_dir().join(format!("ledgerboard-redis-{}", crate::unique_suffix()));
        std::fs::create_dir_all(&dir).expect("folder");
        let mut second = RedisServer {
            port: holder.port,
            dir,
            child: None,
            extra: Vec::new(),
            tls: None,
        };
        let err = second.spawn().expect_err("a second server on a taken port");
        assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");
        assert!(holder.ping(), "the holder is left alone");
    }
}
