//! A Redis Cluster of the run's own: 3 masters and 3 replicas on free ports, formed with
//! `redis-cli --cluster create`, with the two disturbances a cluster client must survive: a
//! replica taking over its master (`CLUSTER FAILOVER`) and a slot moving between masters
//! (the `SETSLOT IMPORTING/MIGRATING`, `MIGRATE`, `SETSLOT NODE` steps), so that clients see
//! MOVED and ASK answers.

use std::io::{Error, ErrorKind};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::{RedisServer, RedisTls};

pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
    /// TLS-only nodes (`tls-cluster yes`: the bus and replication are TLS too, and the nodes
    /// announce their TLS ports), reached by redis-cli with the harness's client certificate.
    tls: Option<RedisTls>,
}

/// One line of `CLUSTER NODES`.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub id: String,
    pub port: u16,
    pub master: bool,
    /// Slot ranges this master serves (empty for a replica).
    pub slots: Vec<(u16, u16)>,
}

impl RedisCluster {
    pub fn start() -> std::io::Result<RedisCluster> {
        Self::start_inner(None)
    }

    /// A cluster whose nodes speak only TLS ([`RedisServer::start_tls`]); `seeds()` are
    /// `rediss://`.
    pub fn start_tls(tls: RedisTls) -> std::io::Result<RedisCluster> {
        Self::start_inner(Some(tls))
    }

    fn start_inner(tls: Option<RedisTls>) -> std::io::Result<RedisCluster> {
        let mut nodes = Vec::new();
        for _ in 0..6 {
            let args = || {
                let mut args: Vec<String> = vec![
                    "--cluster-enabled".into(),
                    "yes".into(),
                    "--cluster-node-timeout".into(),
                    "2000".into(),
                    // The bus port: free as well (port + 10000 may be out of range), and
                    // found again when a start is retried.
                    "--cluster-port".into(),
                    crate::free_port()?.to_string(),
                ];
                if tls.is_some() {
                    args.extend(
                        ["--tls-cluster", "yes", "--tls-replication", "yes"].map(String::from),
                    );
                }
                Ok(args)
            };
            nodes.push(match &tls {
                None => RedisServer::start_with_fresh(args)?,
                Some(t) => RedisServer::start_tls_with_fresh(t.clone(), args)?,
            });
        }
        let mut create = Command::new("redis-cli");
        create.args(tls_args(tls.as_ref()));
        create.arg("--cluster").arg("create");
        for n in &nodes {
            create.arg(format!("127.0.0.1:{}", n.port));
        }
        create.args(["--cluster-replicas", "1", "--cluster-yes"]);
        // redis-cli waits for the nodes to join with no bound of its own (forever when they
        // cannot talk to each other, a TLS bus that refuses its peers): bounded here.
        let out = output_within(&mut create, Duration::from_secs(60))?;
        if !out.status.success() {
            return Err(Error::other(format!(
                "redis-cli --cluster create: {}",
                String::from_utf8_lossy(&out.stdout)
            )));
        }
        let cluster = RedisCluster { nodes, tls };
        cluster.wait_until(Duration::from_secs(30), |c| c.is_ok())?;
        Ok(cluster)
    }

    /// `redis://` URLs of every node, for a cluster client's seeds.
    pub fn seeds(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// True when every node reports `cluster_state:ok` and sees 3 masters serving slots and 3
    /// replicas (right after `--cluster create` the replicas still show as empty masters).
    pub fn is_ok(&self) -> bool {
        self.nodes.iter().all(|n| {
            cli(self.tls.as_ref(), n.port, &["CLUSTER", "INFO"])
                .is_ok_and(|info| info.contains("cluster_state:ok"))
                && cli(self.tls.as_ref(), n.port, &["CLUSTER", "NODES"]).is_ok_and(|text| {
                    let nodes: Vec<_> = text.lines().filter_map(parse_node).collect();
                    nodes
                        .iter()
                        .filter(|n| n.master && !n.slots.is_empty())
                        .count()
                        == 3
                        && nodes.iter().filter(|n| !n.master).count() == 3
                })
        })
    }

    /// The cluster as the first reachable node sees it.
    pub fn topology(&self) -> std::io::Result<Vec<NodeInfo>> {
        let text = self
            .nodes
            .iter()
            .find_map(|n| cli(self.tls.as_ref(), n.port, &["CLUSTER", "NODES"]).ok())
            .ok_or_else(|| Error::other("no node answers CLUSTER NODES"))?;
        Ok(text.lines().filter_map(parse_node).collect())
    }

    /// Makes a replica take over its master (a manual failover: no writes are lost) and waits
    /// until the cluster agrees. Returns the new master's port.
    pub fn failover(&self) -> std::io::Result<u16> {
        let replica = self
            .topology()?
            .into_iter()
            .find(|n| !n.master)
            .ok_or_else(|| Error::other("no replica"))?;
        let promoted = |c: &RedisCluster| {
            c.topology()
                .is_ok_and(|t| t.iter().any(|n| n.port == replica.port && n.master))
        };
        // Redis drops a manual failover that has not completed within 5 s (CLUSTER_MF_TIMEOUT)
        // without a word, and the replica stays one: on a loaded machine it can miss that
        // window (a CI run once waited 30 s for a promotion that was never coming), so the
        // replica is asked again, each time after the last try has surely ended.
        for asked in 1.. {
            if let Err(e) = cli(self.tls.as_ref(), replica.port, &["CLUSTER", "FAILOVER"])
                && !promoted(self)
            {
                return Err(e);
            }
            if self
                .wait_until(Duration::from_secs(7), |c| promoted(c))
                .is_ok()
            {
                break;
            }
            if asked == 5 {
                return Err(Error::new(
                    ErrorKind::TimedOut,
                    format!(
                        "replica {} not promoted after {asked} CLUSTER FAILOVERs",
                        replica.port
                    ),
                ));
            }
        }
        self.wait_until(Duration::from_secs(30), |c| c.is_ok())?;
        Ok(replica.port)
    }

    /// Moves `slot` with its keys to another master, step by step as `redis-cli --cluster
    /// reshard` does; clients in the middle get ASK, afterwards MOVED.
    pub fn migrate_slot(&self, slot: u16) -> std::io::Result<()> {
        let topology = self.topology()?;
        let masters: Vec<_> = topology.iter().filter(|n| n.master).collect();
        let source = masters
            .iter()
            .find(|n| n.slots.iter().any(|&(a, b)| (a..=b).contains(&slot)))
            .ok_or_else(|| Error::other(format!("no master serves slot {slot}")))?;
        let target = masters
            .iter()
            .find(|n| n.id != source.id)
            .ok_or_else(|| Error::other("only one master"))?;
        let slot_arg = slot.to_string();
        cli(
            self.tls.as_ref(),
            target.port,
            &["CLUSTER", "SETSLOT", &slot_arg, "IMPORTING", &source.id],
        )?;
        cli(
            self.tls.as_ref(),
            source.port,
            &["CLUSTER", "SETSLOT", &slot_arg, "MIGRATING", &target.id],
        )?;
        loop {
            let keys = cli(
                self.tls.as_ref(),
                source.port,
                &["CLUSTER", "GETKEYSINSLOT", &slot_arg, "100"],
            )?;
            let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
            if keys.is_empty() {
                break;
            }
            let port = target.port.to_string();
            let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            args.extend(keys);
            cli(self.tls.as_ref(), source.port, &args)?;
        }
        for m in &masters {
            cli(
                self.tls.as_ref(),
                m.port,
                &["CLUSTER", "SETSLOT", &slot_arg, "NODE", &target.id],
            )?;
        }
        self.wait_until(Duration::from_secs(30), |c| {
            c.topology().is_ok_and(|t| {
                t.iter().any(|n| {
                    n.id == target.id && n.slots.iter().any(|&(a, b)| (a..=b).contains(&slot))
                })
            })
        })
    }

    fn wait_until(
        &self,
        limit: Duration,
        done: impl Fn(&RedisCluster) -> bool,
    ) -> std::io::Result<()> {
        let started = Instant::now();
        while !done(self) {
            if started.elapsed() > limit {
                return Err(Error::new(
                    ErrorKind::TimedOut,
                    format!("the cluster did not settle in {limit:?}"),
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }
}

/// One command through `redis-cli` (plain text out; an error reply is an error).
/// Runs `cmd` to its end, or kills it after `limit`.
fn output_within(cmd: &mut Command, limit: Duration) -> std::io::Result<std::process::Output> {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let started = Instant::now();
    while child.try_wait()?.is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output()?;
            return Err(Error::new(
                ErrorKind::TimedOut,
                format!(
                    "redis-cli --cluster create did not finish within {limit:?}: {}",
                    String::from_utf8_lossy(&out.stdout)
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output()
}

/// redis-cli's TLS arguments: the CA it trusts and the client certificate it presents.
fn tls_args(tls: Option<&RedisTls>) -> Vec<String> {
    let Some(tls) = tls else {
        return Vec::new();
    };
    let path = |p: &std::path::PathBuf| p.display().to_string();
    vec![
        "--tls".into(),
        "--cacert".into(),
        path(&tls.ca_file),
        "--cert".into(),
        path(&tls.client_cert_file),
        "--key".into(),
        path(&tls.client_key_file),
    ]
}

fn cli(tls: Option<&RedisTls>, port: u16, args: &[&str]) -> std::io::Result<String> {
    let out = Command::new("redis-cli")
        .args(tls_args(tls))
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() || text.starts_with("ERR") || text.starts_with("(error)") {
        return Err(Error::other(format!(
            "redis-cli {args:?} on {port}: {text}"
        )));
    }
    Ok(text)
}

/// `<id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <state> <slots>...`
fn parse_node(line: &str) -> Option<NodeInfo> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let port = fields
        .get(1)?
        .split(['@', ','])
        .next()?
        .rsplit(':')
        .next()?
        .parse()
        .ok()?;
    let flags = fields.get(2)?;
    let master = flags.split(',').any(|f| f == "master") && !flags.contains("fail");
    let slots = fields
        .iter()
        .skip(8)
        .filter(|s| !s.starts_with('['))
        .filter_map(|s| match s.split_once('-') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => s.parse().ok().map(|a| (a, a)),
        })
        .collect();
    Some(NodeInfo {
        id: fields.first()?.to_string(),
        port,
        master,
        slots,
    })
}
