//! The read model's own instrument: the latency of every Redis call, recorded by
//! [`super::TimedConnection`]. Named as before the move (`ledgerboard.redis.call.duration`,
//! scraped as `ledgerboard_redis_call_duration_seconds`, label `command`), so dashboards and
//! alerts are unchanged. Built with telemetry's meter helpers (telemetry imports nothing of
//! the crate but `config`, so this is no cycle).

use std::sync::OnceLock;
use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;
use redis::Cmd;

use crate::telemetry::metrics::{latency, meter};

static REDIS_CALL_DURATION: OnceLock<Histogram<f64>> = OnceLock::new();

/// One Redis command or pipeline, by `command` (`pipeline` for pipelines). Created from the
/// global meter provider on first use (after `telemetry::init` in a daemon; a no-op in a
/// library test that never called it).
fn redis_call_duration() -> &'static Histogram<f64> {
    REDIS_CALL_DURATION.get_or_init(|| {
        latency(
            &meter(),
            "ledgerboard.redis.call.duration",
            "Redis commands and pipelines by command",
        )
    })
}

/// Records one call labelled `command`, begun at `started`.
pub(super) fn record(command: &'static str, started: Instant) {
    redis_call_duration().record(
        started.elapsed().as_secs_f64(),
        &[KeyValue::new("command", command)],
    );
}

/// The commands ledgerboard sends, as a label; anything else is `other`, so the label's
/// values stay a short fixed list.
const KNOWN_COMMANDS: &[&str] = &[
    "CONFIG",
    "DEL",
    "EVAL",
    "EVALSHA",
    "EXISTS",
    "GET",
    "HGET",
    "HLEN",
    "HMGET",
    "HSCAN",
    "HSET",
    "INFO",
    "PEXPIRE",
    "PING",
    "SADD",
    "SCAN",
    "SCRIPT",
    "SET",
    "SRANDMEMBER",
    "SREM",
    "TYPE",
    "UNLINK",
    "ZADD",
    "ZCARD",
    "ZRANGE",
    "ZREVRANGE",
    "ZREVRANK",
    "ZSCAN",
    "ZSCORE",
];

/// The `command` label of `cmd`: its name if it is one of [`KNOWN_COMMANDS`], else `other`.
pub(super) fn command_label(cmd: &Cmd) -> &'static str {
    let Some(redis::Arg::Simple(name)) = cmd.args_iter().next() else {
        return "other";
    };
    KNOWN_COMMANDS
        .iter()
        .find(|known| known.as_bytes().eq_ignore_ascii_case(name))
        .copied()
        .unwrap_or("other")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_labelled_from_a_fixed_list() {
        assert_eq!(command_label(&redis::cmd("zrevrange")), "ZREVRANGE");
        assert_eq!(command_label(&redis::cmd("EVALSHA")), "EVALSHA");
        assert_eq!(command_label(&redis::cmd("FLUSHALL")), "other");
        assert_eq!(command_label(&Cmd::new()), "other");
    }
}
