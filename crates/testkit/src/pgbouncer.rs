//! A PgBouncer of the test's own in transaction pooling mode (Debian's `pgbouncer`), in front
//! of the shared PostgreSQL, on a free port. Dropping it stops it and deletes its folder.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

// Found through PATH, like every tool the tests run (deploy/tools/env.sh declares it).
const BINARY: &str = "pgbouncer";

pub struct PgBouncer {
    pub port: u16,
    dir: PathBuf,
    child: Child,
}

impl PgBouncer {
    /// `server_connections`: server connections per database and user, so that many clients
    /// share few sessions, as behind a real pooler.
    pub fn start(server_connections: usize) -> PgBouncer {
        let dir =
            std::env::temp_dir().join(format!("ledgerboard-pgbouncer-{}", super::unique_suffix()));
        std::fs::create_dir_all(&dir).expect("pgbouncer folder");
        // PgBouncer refuses to run as root; it drops to `postgres`, who must read the folder.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let admin = url::Url::parse(&super::admin_database_url()).expect("admin URL");
        std::fs::write(dir.join("users.txt"), "\"postgres\" \"\"\n").expect("users.txt");
        // The port is found free, then bound by pgbouncer: another process may take it in
        // between. Then pgbouncer exits (or is not the one listening), and it starts again on
        // another port.
        let mut attempt = 1;
        loop {
            let port = super::free_port();
            std::fs::write(
                dir.join("pgbouncer.ini"),
                format!(
                    "[databases]\n* = host={host} port={pg_port}\n\n[pgbouncer]\n\
                     listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
                     auth_type = trust\nauth_file = {users}\npool_mode = transaction\n\
                     default_pool_size = {server_connections}\nmax_client_conn = 500\n\
                     ignore_startup_parameters = extra_float_digits\nlogfile = {log}\n",
                    host = admin.host_str().unwrap_or("127.0.0.1"),
                    pg_port = admin.port().unwrap_or(5432),
                    users = dir.join("users.txt").display(),
                    log = dir.join("pgbouncer.log").display(),
                ),
            )
            .expect("pgbouncer.ini");
            let mut command = Command::new(BINARY);
            // As root it must be told whom to run as.
            if running_as_root() {
                command.args(["-u", "postgres"]);
            }
            let mut child = command
                .arg(dir.join("pgbouncer.ini"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("start {BINARY} (apt-get install pgbouncer): {e}"));
            match wait_listening(&mut child, port) {
                Ok(()) => return PgBouncer { port, dir, child },
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let log = std::fs::read_to_string(dir.join("pgbouncer.log"))
                        .unwrap_or_else(|e| format!("(pgbouncer.log unreadable: {e})"));
                    assert!(
                        attempt < 5,
                        "pgbouncer did not listen on {port}: {e}: {log}"
                    );
                    eprintln!("pgbouncer on {port}: {e}; trying another port");
                    attempt += 1;
                }
            }
        }
    }

    /// The URL of `database` through this PgBouncer.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// PgBouncer's log, for failure messages (a note in its place when it cannot be read).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("pgbouncer.log"))
            .unwrap_or_else(|e| format!("(pgbouncer.log unreadable: {e})"))
    }
}

/// Waits until pgbouncer accepts connections on `port` while still running (a port that
/// answers while our process exited belongs to someone else).
fn wait_listening(child: &mut Child, port: u16) -> Result<(), String> {
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("exited with {status}"));
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            // It may have failed to bind a moment ago and be exiting now.
            std::thread::sleep(Duration::from_millis(50));
            return match child.try_wait() {
                Ok(None) => Ok(()),
                _ => Err("exited; the port is someone else's".into()),
            };
        }
        if started.elapsed() > Duration::from_secs(10) {
            return Err("not listening within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether this process runs as root (uid 0), read from /proc without unsafe code.
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next().map(|u| u == "0"))
        })
        .unwrap_or(false)
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
