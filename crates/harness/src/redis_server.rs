use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A redis-server of the caller's own on a free port, with its data in a temporary folder.
/// `stop` saves the data and `restart` loads it; `crash` loses it. Dropping it kills the
/// server and deletes the folder.
pub struct RedisServer {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
    extra: Vec<String>,
}

impl RedisServer {
    pub fn start() -> std::io::Result<RedisServer> {
        Self::start_with(&[])
    }

    /// With further `redis-server` arguments (for example a cluster node's).
    pub fn start_with(extra: &[String]) -> std::io::Result<RedisServer> {
        let dir =
            std::env::temp_dir().join(format!("ledgerboard-redis-{}", super::unique_suffix()));
        std::fs::create_dir_all(&dir)?;
        let mut server = RedisServer {
            port: super::free_port()?,
            dir,
            child: None,
            extra: extra.to_vec(),
        };
        server.spawn()?;
        Ok(server)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn spawn(&mut self) -> std::io::Result<()> {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
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
        self.child = Some(child);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if self.ping() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("redis-server on port {} did not answer", self.port),
        ))
    }

    fn connection(&self) -> Option<redis::Connection> {
        redis::Client::open(self.url())
            .ok()?
            .get_connection_with_timeout(Duration::from_secs(2))
            .ok()
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
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
        }
        self.reap();
    }

    fn reap(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port, with the data `stop` saved.
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
