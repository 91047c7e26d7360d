//! Redis Cluster mode (`redis.cluster = true`): one multiplexed cluster connection per process,
//! shared by every task, built with the same connect and response timeouts as the single-server
//! pool (deadpool-redis's cluster pool takes none).
//!
//! The redis crate's cluster client routes a single command by its key and follows MOVED, ASK,
//! TRYAGAIN and CLUSTERDOWN itself, refreshing its slot map on MOVED. It routes a pipeline to
//! the slot of its first key and refuses one that spans slots. [`ClusterLink`] lifts that
//! limit: a pipeline whose commands name several slots is split into one sub-pipeline per slot,
//! sent concurrently, and the replies put back in order. Every caller's pipeline (the
//! projector's batch across boards, the reconciler's per-board reads) therefore works
//! unchanged, each board's commands staying together because a board's keys share one slot
//! (`keys.rs`).
//!
//! A MULTI/EXEC transaction is answered EXECABORT when one of its commands met a redirect, and
//! the client, seeing no MOVED, would keep its stale slot map: after EXECABORT a plain EXISTS
//! of the transaction's first key lets the client follow the redirect and refresh the map, and
//! the transaction is sent once more.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::try_join_all;
use redis::aio::ConnectionLike;
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo, SingleNodeRoutingInfo};
use redis::{Arg, Cmd, Pipeline, RedisFuture, RedisResult, Value};
use tokio::sync::OnceCell;

use super::ReadModelError;
use super::keys::cluster_slot_bytes;
use crate::config::RedisSettings;

/// The cluster client and its connection, opened on first use (like the single-server pool,
/// so a daemon starts while Redis is still coming up).
pub(super) struct ClusterBackend {
    client: redis::cluster::ClusterClient,
    connection: OnceCell<ClusterConnection>,
    open_timeout: Duration,
}

impl ClusterBackend {
    pub(super) fn new(settings: &RedisSettings) -> Result<Self, ReadModelError> {
        let mut builder = ClusterClientBuilder::new(settings.seed_urls())
            .connection_timeout(settings.connect_timeout())
            // Per attempt and overall (redirects and retries included): one call never takes
            // longer than the single-server pool's, so the projector's batch budget holds.
            .response_timeout(settings.response_timeout());
        // rediss:// seeds: every node the client learns of is reached over TLS too, with the
        // same CA and client certificate.
        if settings.tls() {
            builder = builder.certs(super::tls::certificates(settings)?);
        }
        let client = builder.build()?;
        Ok(Self {
            client,
            connection: OnceCell::new(),
            // Seeds, CLUSTER SLOTS, then every node: connect, then one round trip.
            open_timeout: settings.connect_timeout() + settings.response_timeout(),
        })
    }

    pub(super) async fn link(&self) -> Result<ClusterLink, ReadModelError> {
        let conn = self
            .connection
            .get_or_try_init(|| async {
                match tokio::time::timeout(self.open_timeout, self.client.get_async_connection())
                    .await
                {
                    Ok(Ok(conn)) => Ok(conn),
                    Ok(Err(e)) => Err(ReadModelError::Unavailable(format!("redis cluster: {e}"))),
                    Err(_) => Err(ReadModelError::Unavailable(format!(
                        "redis cluster: no connection within {} ms",
                        self.open_timeout.as_millis()
                    ))),
                }
            })
            .await?;
        Ok(ClusterLink(conn.clone()))
    }
}

/// A handle on the shared cluster connection (cheap to clone: the connection is multiplexed).
#[derive(Clone)]
pub struct ClusterLink(ClusterConnection);

impl ClusterLink {
    /// Sends `cmd` to every primary and returns each one's reply with its address.
    pub(super) async fn on_each_primary(&mut self, cmd: Cmd) -> RedisResult<Vec<(String, Value)>> {
        let reply = self
            .0
            .route_command(
                cmd,
                RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None)),
            )
            .await?;
        by_address(reply)
    }

    /// Sends `cmd` to the node at `address` (`host:port`, as [`Self::on_each_primary`] names it).
    pub(super) async fn on_node(&mut self, address: &str, cmd: Cmd) -> RedisResult<Value> {
        let (host, port) = address
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.to_owned(), p.parse().ok()?)))
            .ok_or_else(|| {
                redis::RedisError::from((
                    redis::ErrorKind::Client,
                    "not a host:port node address",
                    address.to_owned(),
                ))
            })?;
        self.0
            .route_command(
                cmd,
                RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host, port }),
            )
            .await
    }

    async fn split_by_slot(&self, pipeline: &Pipeline) -> RedisResult<Vec<Value>> {
        let mut groups: BTreeMap<Option<u16>, (Pipeline, Vec<usize>)> = BTreeMap::new();
        for (index, cmd) in pipeline.cmd_iter().enumerate() {
            let (sub, indices) = groups
                .entry(first_key(cmd).map(cluster_slot_bytes))
                .or_insert_with(|| (Pipeline::new(), Vec::new()));
            sub.add_command(cmd.clone());
            indices.push(index);
        }
        if groups.len() <= 1 {
            let mut conn = self.0.clone();
            return conn.req_packed_commands(pipeline, 0, pipeline.len()).await;
        }
        let sent = try_join_all(groups.into_values().map(|(sub, indices)| {
            let mut conn = self.0.clone();
            async move {
                let replies = conn.req_packed_commands(&sub, 0, sub.len()).await?;
                Ok::<_, redis::RedisError>((indices, replies))
            }
        }))
        .await?;
        let mut replies = vec![Value::Nil; pipeline.len()];
        for (indices, values) in sent {
            for (index, value) in indices.into_iter().zip(values) {
                replies[index] = value;
            }
        }
        Ok(replies)
    }

    async fn transaction(
        &mut self,
        pipeline: &Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let reply = self.0.req_packed_commands(pipeline, offset, count).await;
        let aborted = match &reply {
            Ok(values) => values.iter().any(is_exec_abort),
            Err(e) => e.code() == Some("EXECABORT"),
        };
        let Some(key) = pipeline.cmd_iter().find_map(first_key).filter(|_| aborted) else {
            return reply;
        };
        let _: RedisResult<Value> = self
            .0
            .req_packed_command(redis::cmd("EXISTS").arg(key))
            .await;
        self.0.req_packed_commands(pipeline, offset, count).await
    }
}

impl ConnectionLike for ClusterLink {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.0.req_packed_command(cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            if pipeline.is_transaction() {
                self.transaction(pipeline, offset, count).await
            } else if offset == 0 && count == pipeline.len() {
                self.split_by_slot(pipeline).await
            } else {
                self.0.req_packed_commands(pipeline, offset, count).await
            }
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}

/// The key a command is routed by: the first key of EVAL/EVALSHA (after the script and the
/// key count), else the first argument. `None` for a command without one (PING, SCAN, …),
/// which the client sends to any node.
fn first_key(cmd: &Cmd) -> Option<&[u8]> {
    let mut args = cmd.args_iter().map(|arg| match arg {
        Arg::Simple(bytes) => Some(bytes),
        _ => None,
    });
    let name = args.next()??;
    let is = |known: &str| name.eq_ignore_ascii_case(known.as_bytes());
    if is("EVAL") || is("EVALSHA") || is("EVAL_RO") || is("EVALSHA_RO") {
        let _script = args.next()?;
        let numkeys: usize = std::str::from_utf8(args.next()??).ok()?.parse().ok()?;
        return if numkeys == 0 { None } else { args.next()? };
    }
    if is("PING") || is("SCAN") || is("INFO") || is("CONFIG") || is("SCRIPT") {
        return None;
    }
    args.next()?
}

fn is_exec_abort(value: &Value) -> bool {
    matches!(value, Value::ServerError(e) if e.code() == "EXECABORT")
}

/// The reply of a command routed to several nodes: a map of node address to that node's reply.
fn by_address(reply: Value) -> RedisResult<Vec<(String, Value)>> {
    let Value::Map(pairs) = reply else {
        return Err(redis::RedisError::from((
            redis::ErrorKind::Parse,
            "a multi-node reply is not a map of node to reply",
        )));
    };
    pairs
        .into_iter()
        .map(|(address, value)| Ok((redis::from_redis_value::<String>(address)?, value)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_routed_by_their_first_key() {
        let evalsha = redis::cmd("EVALSHA")
            .arg("abc")
            .arg(3)
            .arg("ns:lb:{b}:e:1")
            .arg("ns:lb:{b}:z")
            .arg("ns:lb:{b}:v")
            .arg("user")
            .clone();
        assert_eq!(first_key(&evalsha), Some(&b"ns:lb:{b}:e:1"[..]));
        let keyless_script = redis::cmd("EVAL").arg("return 1").arg(0).clone();
        assert_eq!(first_key(&keyless_script), None);
        let zscore = redis::cmd("ZSCORE").arg("ns:lb:{b}:z").arg("u").clone();
        assert_eq!(first_key(&zscore), Some(&b"ns:lb:{b}:z"[..]));
        assert_eq!(first_key(&redis::cmd("PING")), None);
        let scan = redis::cmd("SCAN").cursor_arg(0).clone();
        assert_eq!(first_key(&scan), None);
    }
}
