//! A PostgreSQL cluster of the caller's own (initdb into a temporary folder, `pg_ctl` on a
//! free port), for tests that restart the server or change how it accepts connections (TLS,
//! `pg_hba.conf`): never the shared server. Trust authentication, user `postgres`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How many ports [`PostgresServer::start`] tries before giving up.
const START_ATTEMPTS: u32 = 5;

pub struct PostgresServer {
    pub port: u16,
    dir: PathBuf,
    bin: PathBuf,
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// `cmd` as the `postgres` user when this process is root (initdb and postgres refuse to run
/// as root).
fn as_postgres(cmd: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(cmd);
        c
    } else {
        Command::new(cmd)
    }
}

fn failed(what: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(what.to_string())
}

impl PostgresServer {
    /// A fresh cluster, started and answering.
    pub fn start() -> std::io::Result<PostgresServer> {
        Self::start_with(|_| Ok(()))
    }

    /// As [`Self::start`], with `prepare` run on the initialised cluster before its first
    /// start (to install certificate files, settings, a `pg_hba.conf`).
    pub fn start_with(
        prepare: impl FnOnce(&PostgresServer) -> std::io::Result<()>,
    ) -> std::io::Result<PostgresServer> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .map_err(|e| {
                failed(format!(
                    "PostgreSQL server binaries (apt-get install postgresql): {e}"
                ))
            })?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .max()
            .ok_or_else(|| failed("no PostgreSQL version under /usr/lib/postgresql"))?;
        let dir = std::env::temp_dir().join(format!("lbpg-{}", super::unique_suffix()));
        std::fs::create_dir_all(&dir)?;
        let mut pg = PostgresServer { port: 0, dir, bin };
        pg.chown(&pg.dir)?;
        let ok = as_postgres(&pg.bin.join("initdb"))
            .args(["-U", "postgres", "--auth=trust", "-D"])
            .arg(pg.data())
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err(failed("initdb failed"));
        }
        prepare(&pg)?;
        // The port was found free and is bound by the server later: another process may take
        // it in between, and then the start fails; it is tried again on another port.
        for _ in 0..START_ATTEMPTS {
            pg.port = super::free_port()?;
            if pg.try_ctl(&["start"]) {
                return Ok(pg);
            }
        }
        Err(failed(format!(
            "pg_ctl start failed {START_ATTEMPTS} times; log: {}",
            std::fs::read_to_string(pg.dir.join("log")).unwrap_or_default()
        )))
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn chown(&self, path: &Path) -> std::io::Result<()> {
        if !is_root() {
            return Ok(());
        }
        let ok = Command::new("chown")
            .arg("postgres")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            Ok(())
        } else {
            Err(failed(format!("chown postgres {}", path.display())))
        }
    }

    /// Writes `contents` to `name` in the data folder, readable only by the server (a key file
    /// must be: PostgreSQL refuses one that others can read). Returns its path.
    pub fn install_file(&self, name: &str, contents: &[u8]) -> std::io::Result<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = self.data().join(name);
        std::fs::write(&path, contents)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        self.chown(&path)?;
        Ok(path)
    }

    /// Adds lines to `postgresql.conf` (later lines win); applied at the next start or reload.
    pub fn configure(&self, lines: &[&str]) -> std::io::Result<()> {
        use std::io::Write;
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(self.data().join("postgresql.conf"))?;
        for line in lines {
            writeln!(conf, "{line}")?;
        }
        Ok(())
    }

    /// Replaces `pg_hba.conf`; applied at the next start or reload.
    pub fn set_hba(&self, contents: &str) -> std::io::Result<()> {
        self.install_file("pg_hba.conf", contents.as_bytes())
            .map(|_| ())
    }

    /// Runs `pg_ctl <action>` (`-m fast restart`, `reload`, …) and waits for it.
    pub fn ctl(&self, action: &[&str]) -> std::io::Result<()> {
        if self.try_ctl(action) {
            Ok(())
        } else {
            Err(failed(format!("pg_ctl {action:?} failed")))
        }
    }

    fn try_ctl(&self, action: &[&str]) -> bool {
        as_postgres(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.join("log"))
            .args(["-w", "-t", "60", "-o"])
            .arg(format!(
                "-p {} -c listen_addresses=127.0.0.1 -k {}",
                self.port,
                self.dir.display()
            ))
            .args(action)
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// The `postgres` database over TCP; add `?sslmode=…` as needed.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        let _ = as_postgres(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
