//! CPU time per unit of work: what each process spent (user + system, from `/proc`) while a
//! figure was measured, divided by the commands, rows or reads it did. Throughput ratios on a
//! shared two-core machine move with the hour (every process, the load tool included, shares
//! the cores); what a unit of work costs in CPU does not, so the targets are set on it.
//!
//! The groups: `ours` is this process apart from the load generator (the api or the projector
//! replicas run here, on the main runtime); `load` the load generator's threads (named `load`,
//! [`crate::load`]); `postgres` every PostgreSQL process, the backends that exited during the
//! window included (the postmaster's reaped children's times); `redis` every `redis-server`;
//! `tools` this process's child processes that ended in the window (pgbench, redis-benchmark,
//! `lbctl`, the reconciler: all are waited for).

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// The unit of `/proc/<pid>/stat`'s times: the kernel's USER_HZ, which is 100 on every Linux
/// ABI (it is fixed for user space, whatever the kernel's own tick).
const TICKS_PER_S: f64 = 100.0;

/// Ticks the load generator's threads spent, added by each load runtime as it ends
/// ([`add_load_threads`]): its threads are gone by the time a meter stops.
static LOAD_TICKS: AtomicU64 = AtomicU64::new(0);

/// CPU seconds by group over one window.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Cpu {
    pub ours: f64,
    pub load: f64,
    pub postgres: f64,
    pub redis: f64,
    pub tools: f64,
}

impl std::ops::Add for Cpu {
    type Output = Cpu;

    fn add(self, o: Cpu) -> Cpu {
        Cpu {
            ours: self.ours + o.ours,
            load: self.load + o.load,
            postgres: self.postgres + o.postgres,
            redis: self.redis + o.redis,
            tools: self.tools + o.tools,
        }
    }
}

impl Cpu {
    /// The mean of several figures (per-unit figures of rounds of about the same size).
    pub fn mean(all: impl Iterator<Item = Cpu>) -> Cpu {
        let (sum, n) = all.fold((Cpu::default(), 0), |(s, n), c| (s + c, n + 1));
        let n = f64::from(n);
        Cpu {
            ours: sum.ours / n,
            load: sum.load / n,
            postgres: sum.postgres / n,
            redis: sum.redis / n,
            tools: sum.tools / n,
        }
    }

    /// Microseconds per unit of each group, for `units` units of work.
    pub fn per(&self, units: f64) -> Cpu {
        let us = |s: f64| {
            if units > 0.0 {
                s * 1e6 / units
            } else {
                f64::NAN
            }
        };
        Cpu {
            ours: us(self.ours),
            load: us(self.load),
            postgres: us(self.postgres),
            redis: us(self.redis),
            tools: us(self.tools),
        }
    }

    /// What the servers and the code under test spent: everything but the load generator and
    /// the tools (pgbench's and redis-benchmark's clients are their load generators).
    pub fn serving(&self) -> f64 {
        self.ours + self.postgres + self.redis
    }

    /// The serving groups that spent something, as `api 12 + postgres 80` (µs when the
    /// figures are per unit): `ours` named `name`; the load generator left out.
    pub fn breakdown(&self, name: &str) -> String {
        [
            (name, self.ours),
            ("postgres", self.postgres),
            ("redis", self.redis),
            ("tools", self.tools),
        ]
        .iter()
        .filter(|(_, v)| *v >= 0.5)
        .map(|(n, v)| format!("{n} {v:.0}"))
        .collect::<Vec<_>>()
        .join(" + ")
    }
}

/// A window being measured: the totals at its start.
pub struct Meter {
    start: Totals,
}

#[derive(Clone, Copy)]
struct Totals {
    process: u64,
    children: u64,
    load: u64,
    postgres: u64,
    redis: u64,
}

impl Meter {
    pub fn start() -> Self {
        Self { start: totals() }
    }

    /// CPU seconds spent by each group since [`Meter::start`].
    pub fn stop(self) -> Cpu {
        let end = totals();
        let s = |a: u64, b: u64| a.saturating_sub(b) as f64 / TICKS_PER_S;
        let load = s(end.load, self.start.load);
        Cpu {
            ours: (s(end.process, self.start.process) - load).max(0.0),
            load,
            postgres: s(end.postgres, self.start.postgres),
            redis: s(end.redis, self.start.redis),
            tools: s(end.children, self.start.children),
        }
    }
}

/// Adds the CPU of this process's threads named `load` to [`LOAD_TICKS`]: called by a load
/// runtime just before it ends, when its threads are all still there.
pub fn add_load_threads() {
    let mut ticks = 0;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            if let Some(stat) = read_stat(&task.path().join("stat"))
                && stat.comm == "load"
            {
                ticks += stat.own();
            }
        }
    }
    LOAD_TICKS.fetch_add(ticks, Ordering::Relaxed);
}

fn totals() -> Totals {
    let me = read_stat(std::path::Path::new("/proc/self/stat")).unwrap_or_default();
    let (postgres, redis) = servers();
    Totals {
        process: me.own(),
        children: me.children,
        load: LOAD_TICKS.load(Ordering::Relaxed),
        postgres,
        redis,
    }
}

/// PostgreSQL's and Redis's ticks. A backend that exits while `/proc` is walked moves its
/// time into its postmaster's reaped children's: read before the postmaster it would be
/// counted twice, after it not at all (pids wrap, so the walk's order says nothing). The walk
/// is repeated until the postmasters' reaped times did not change during it. (Without this,
/// one pgbench window that began as the previous stack's connections closed measured
/// 2.6 µs of PostgreSQL per statement.)
fn servers() -> (u64, u64) {
    let mut walk = walk_servers();
    for _ in 0..10 {
        let again = walk_servers();
        if again.reaped == walk.reaped {
            return (again.postgres, again.redis);
        }
        walk = again;
    }
    (walk.postgres, walk.redis)
}

struct Walk {
    postgres: u64,
    redis: u64,
    /// The postmasters' reaped children's ticks.
    reaped: u64,
}

fn walk_servers() -> Walk {
    let all: Vec<(u32, Stat)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((pid, read_stat(&e.path().join("stat"))?))
        })
        .collect();
    let is_postgres = |pid: u32| all.iter().any(|(p, s)| *p == pid && s.comm == "postgres");
    let mut walk = Walk {
        postgres: 0,
        redis: 0,
        reaped: 0,
    };
    for (_, stat) in &all {
        match stat.comm.as_str() {
            "postgres" => {
                walk.postgres += stat.own();
                // A postmaster (its parent is not PostgreSQL) holds the times of the backends
                // it reaped: connections that closed in the window spent them.
                if !is_postgres(stat.ppid) {
                    walk.postgres += stat.children;
                    walk.reaped += stat.children;
                }
            }
            "redis-server" => walk.redis += stat.own(),
            _ => {}
        }
    }
    walk
}

#[derive(Default)]
struct Stat {
    comm: String,
    ppid: u32,
    utime: u64,
    stime: u64,
    /// cutime + cstime: the reaped children's.
    children: u64,
}

impl Stat {
    fn own(&self) -> u64 {
        self.utime + self.stime
    }
}

/// `/proc/<pid>/stat`: `pid (comm) state ppid …`, utime and stime the 14th and 15th fields,
/// cutime and cstime the 16th and 17th. The name may hold spaces and parentheses, so the
/// fields are counted from its last `)`. None when the process is gone or the text is odd.
fn read_stat(path: &std::path::Path) -> Option<Stat> {
    let text = std::fs::read_to_string(path).ok()?;
    parse_stat(&text)
}

fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    // After the name: state (field 3) is index 0, so field n is index n − 3.
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        comm,
        ppid: u32::try_from(field(4)?).ok()?,
        utime: field(14)?,
        stime: field(15)?,
        children: field(16)? + field(17)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_by_field_after_the_name() {
        let line = "4242 (postgres: ledger (x) idle) S 17 4242 4242 0 -1 4194560 312 0 0 0 \
                    25 7 3 2 20 0 1 0 1234 0 0";
        let stat = parse_stat(line).expect("a stat line");
        assert_eq!(stat.comm, "postgres: ledger (x) idle");
        assert_eq!(
            (stat.ppid, stat.utime, stat.stime, stat.children),
            (17, 25, 7, 5)
        );
        assert!(parse_stat("4242 (cut").is_none());
    }

    /// Work in this process shows up in `ours`, and a child process's in `tools`.
    #[test]
    fn the_meter_sees_this_process_and_its_children() {
        let meter = Meter::start();
        let started = std::time::Instant::now();
        let mut x = 0u64;
        while started.elapsed() < std::time::Duration::from_millis(200) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let status = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .expect("sh runs");
        assert!(status.success());
        let cpu = meter.stop();
        assert!(cpu.ours >= 0.1, "{cpu:?}");
        assert!(cpu.tools >= 0.05, "{cpu:?}");
    }
}
