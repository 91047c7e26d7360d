use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use crate::wait::wait_until_blocking;

/// A binary run as a child process, its stderr kept in a file (a pipe could fill up and stall
/// the child). Dropping it kills the process.
pub struct Daemon {
    child: Child,
    stderr_path: PathBuf,
}

impl Daemon {
    /// Starts `binary` with `env` added to this process's environment minus every variable
    /// whose name starts with `LEDGERBOARD` (the caller's own settings and config file).
    pub fn start(binary: &Path, args: &[&str], env: &[(&str, &str)]) -> std::io::Result<Daemon> {
        let stderr_path =
            std::env::temp_dir().join(format!("ledgerboard-{}.stderr", super::unique_suffix()));
        let stderr = std::fs::File::create(&stderr_path)?;
        let mut command = Command::new(binary);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("LEDGERBOARD") {
                command.env_remove(key);
            }
        }
        command.envs(env.iter().copied());
        let child = command.spawn().map_err(|e| {
            std::io::Error::new(e.kind(), format!("start {}: {e}", binary.display()))
        })?;
        Ok(Daemon { child, stderr_path })
    }

    /// Starts `binary` as [`Daemon::start`] does and waits up to `limit` until it logs
    /// `<binary name> started`, the line every ledgerboard daemon logs once it serves. The
    /// error of a daemon that did not start carries its stderr.
    pub fn start_ready(
        binary: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        limit: Duration,
    ) -> std::io::Result<Daemon> {
        let name = binary
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut daemon = Daemon::start(binary, args, env)?;
        if !daemon.wait_for_log(&format!("{name} started"), limit)? {
            return Err(std::io::Error::other(format!(
                "{name} did not start within {limit:?}:\n{}",
                daemon.stderr()?
            )));
        }
        Ok(daemon)
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// What the process wrote to stderr so far. An unreadable file is an error, never an
    /// empty text: a caller looking for what is absent ("no panic") would pass on nothing.
    pub fn stderr(&self) -> std::io::Result<String> {
        std::fs::read_to_string(&self.stderr_path).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("read the stderr file {}: {e}", self.stderr_path.display()),
            )
        })
    }

    /// Waits up to `limit` for the process to exit by itself.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let mut status = None;
        wait_until_blocking(limit, || {
            status = self.child.try_wait().ok().flatten();
            status.is_some()
        });
        status
    }

    /// Sends SIGTERM (as Kubernetes does) and waits up to `limit` for the exit.
    pub fn terminate(&mut self, limit: Duration) -> Option<ExitStatus> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.wait_for_exit(limit)
    }

    /// SIGKILL: the process gets no chance to finish anything.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Polls stderr until `needle` appears, for at most `limit`; false when the process exits
    /// or the time runs out first, an error when stderr cannot be read.
    pub fn wait_for_log(&mut self, needle: &str, limit: Duration) -> std::io::Result<bool> {
        // A process that exited has written all it will: stop waiting then. An unreadable
        // stderr file is the caller's error, not a "not yet".
        let mut read = Ok(false);
        wait_until_blocking(limit, || {
            let exited = matches!(self.child.try_wait(), Ok(Some(_)));
            read = self.stderr().map(|text| text.contains(needle));
            !matches!(read, Ok(false)) || exited
        });
        read
    }
}

impl Daemon {
    /// Waits up to `limit` for a log line containing `message` and returns the `addr` it
    /// names: the address a daemon given `127.0.0.1:0` bound (the api logs it with
    /// `ledgerboard-api started`, the admin servers with `admin server (healthz, readyz,
    /// metrics) listening`). A port found free and handed to the daemon could be taken by
    /// another process before it binds; a port the daemon chose cannot. An error when the line
    /// does not come in time, names no address, or stderr cannot be read.
    pub fn wait_for_addr(
        &mut self,
        message: &str,
        limit: Duration,
    ) -> std::io::Result<std::net::SocketAddr> {
        if !self.wait_for_log(message, limit)? {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no {message:?} within {limit:?}: {}", self.stderr()?),
            ));
        }
        let stderr = self.stderr()?;
        stderr
            .lines()
            .filter(|l| l.contains(message))
            .find_map(logged_addr)
            .ok_or_else(|| std::io::Error::other(format!("{message:?} names no addr: {stderr}")))
    }
}

/// The address in a log line, as the daemons write it: `addr=127.0.0.1:4000` (human format)
/// or `"addr":"127.0.0.1:4000"` (JSON).
fn logged_addr(line: &str) -> Option<std::net::SocketAddr> {
    let (_, rest) = line
        .split_once("addr=")
        .or_else(|| line.split_once("\"addr\":\""))?;
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '"' || c == ',')
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.stderr_path);
    }
}

/// The path of `name` in the directory of the running executable, where cargo puts every
/// binary of the workspace: how `lbchaos` finds the daemons it runs.
pub fn binary_beside_current_exe(name: &str) -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .ok_or_else(|| std::io::Error::other("the executable has no directory"))?;
    let path = dir.join(name);
    if path.exists() {
        Ok(path)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "{} not found: build every binary (`cargo build --workspace --bins`)",
                path.display()
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::logged_addr;

    #[test]
    fn addresses_are_read_from_both_log_formats() {
        let human = "2026-12-01T14:00:00Z  INFO ledgerboard_api: ledgerboard-api started addr=127.0.0.1:41234";
        assert_eq!(logged_addr(human), "127.0.0.1:41234".parse().ok());
        let json = r#"{"fields":{"message":"admin server listening","addr":"127.0.0.1:9"}}"#;
        assert_eq!(logged_addr(json), "127.0.0.1:9".parse().ok());
        assert_eq!(logged_addr("ledgerboard-api started"), None);
    }
}
