//! The machine a run measured on: its cores and CPU, and the servers' versions and settings.

use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Machine {
    pub cores: usize,
    pub cpu: String,
    pub postgres: String,
    pub redis: String,
    /// The server settings that move these figures, as `name=value`.
    pub postgres_settings: String,
    pub redis_settings: String,
}

impl Machine {
    pub async fn read() -> anyhow::Result<Self> {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("model name"))
                    .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
            })
            .unwrap_or_else(|| "unknown".into());
        let postgres = command_output("psql", &["--version"]);
        let redis = command_output("redis-server", &["--version"]);
        let postgres_settings = command_output(
            "psql",
            &[
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-Atc",
                "SELECT string_agg(name || '=' || current_setting(name), ', ' ORDER BY name) \
                 FROM pg_settings WHERE name IN ('shared_buffers', 'synchronous_commit', 'fsync', \
                 'wal_level', 'max_connections', 'checkpoint_timeout', 'max_wal_size', 'work_mem', \
                 'commit_delay', 'jit')",
            ],
        );
        let redis_settings = [
            "maxmemory",
            "maxmemory-policy",
            "appendonly",
            "save",
            "io-threads",
        ]
        .iter()
        .map(|name| {
            let out = command_output("redis-cli", &["-h", "127.0.0.1", "config", "get", name]);
            format!("{name}={}", out.lines().nth(1).unwrap_or("?"))
        })
        .collect::<Vec<_>>()
        .join(", ");
        Ok(Self {
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu,
            postgres,
            redis,
            postgres_settings,
            redis_settings,
        })
    }
}

fn command_output(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".into())
}
