//! A Redis Cluster of the run's own: 3 masters and 3 replicas on free ports, formed with
//! `redis-cli --cluster create`, with the two disturbances a cluster client must survive: a
//! replica taking over its master (`CLUSTER FAILOVER`) and a slot moving between masters
//! (the `SETSLOT IMPORTING/MIGRATING`, `MIGRATE`, `SETSLOT NODE` steps), so that clients see
//! MOVED and ASK answers.

use std::io::{Error, ErrorKind};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::RedisServer;

pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
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
        let mut nodes = Vec::new();
        for _ in 0..6 {
            nodes.push(RedisServer::start_with_fresh(|| {
                Ok(vec![
                    "--cluster-enabled".into(),
                    "yes".into(),
                    "--cluster-node-timeout".into(),
                    "2000".into(),
                    // The bus port: free as well (port + 10000 may be out of range), and
                    // found again when a start is retried.
                    "--cluster-port".into(),
                    crate::free_port()?.to_string(),
                ])
            })?);
        }
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for n in &nodes {
            create.arg(format!("127.0.0.1:{}", n.port));
        }
        let out = create
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()?;
        if !out.status.success() {
            return Err(Error::other(format!(
                "redis-cli --cluster create: {}",
                String::from_utf8_lossy(&out.stdout)
            )));
        }
        let cluster = RedisCluster { nodes };
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
            cli(n.port, &["CLUSTER", "INFO"]).is_ok_and(|info| info.contains("cluster_state:ok"))
                && cli(n.port, &["CLUSTER", "NODES"]).is_ok_and(|text| {
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
            .find_map(|n| cli(n.port, &["CLUSTER", "NODES"]).ok())
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
        cli(replica.port, &["CLUSTER", "FAILOVER"])?;
        self.wait_until(Duration::from_secs(30), |c| {
            c.topology()
                .is_ok_and(|t| t.iter().any(|n| n.port == replica.port && n.master))
                && c.is_ok()
        })?;
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
            target.port,
            &["CLUSTER", "SETSLOT", &slot_arg, "IMPORTING", &source.id],
        )?;
        cli(
            source.port,
            &["CLUSTER", "SETSLOT", &slot_arg, "MIGRATING", &target.id],
        )?;
        loop {
            let keys = cli(source.port, &["CLUSTER", "GETKEYSINSLOT", &slot_arg, "100"])?;
            let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
            if keys.is_empty() {
                break;
            }
            let port = target.port.to_string();
            let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            args.extend(keys);
            cli(source.port, &args)?;
        }
        for m in &masters {
            cli(
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
fn cli(port: u16, args: &[&str]) -> std::io::Result<String> {
    let out = Command::new("redis-cli")
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
