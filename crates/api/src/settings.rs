//! The api's sections, `[api]` and `[auth]`, read with the shared ones (core's `config`).

use std::net::SocketAddr;
use std::time::Duration;

use ledgerboard_core::auth::TokenTable;
use ledgerboard_core::auth::player::PlayerKeys;

pub use crate::client::TrustedProxies;
use ledgerboard_core::config::{
    self, ConfigError, Count, DaemonSection, Millis, Secret, in_range, invalid,
};
use serde::{Deserialize, Serialize};

/// What the api binary reads: the shared sections, `[api]` and `[auth]`.
pub type Settings = config::Settings<Sections>;

/// The api's own sections of the settings file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sections {
    pub api: ApiSettings,
    pub auth: AuthSettings,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApiSettings {
    /// Address the HTTP server binds, e.g. `127.0.0.1:8080` (`0.0.0.0:8080` in a container).
    pub listen: String,
    /// Largest accepted request body; a larger one is answered 413.
    pub body_limit_bytes: Count<256, { 16 << 20 }>,
    /// Bound on handling one request, end to end.
    pub request_timeout_ms: Millis<100, 600_000>,
    /// `consistency=bounded` reads (the default) come from the projection while its oldest
    /// pending row is at most this old, else from PostgreSQL.
    pub max_lag_ms: Millis<0, 86_400_000>,
    /// How long one measurement of the projection's lag serves all reads.
    pub freshness_cache_ms: Millis<0, 60_000>,
    /// How long the api keeps a board's definition before reading it again. A change made
    /// through this api process is seen by its next command at once; one made elsewhere (another
    /// replica, `lbctl board`) within this long (commands validated against the old one are
    /// refused by their statement and retried with the new one).
    pub definition_cache_ms: Millis<0, 60_000>,
    /// Requests per second allowed per token (or, without one, per client address); 0 turns
    /// the limit off.
    pub rate_limit_per_s: u32,
    /// Requests a token or address may send at once above the rate before 429.
    pub rate_limit_burst: u32,
    /// Requests per minute allowed per player (a player token's `sub`, whichever key minted
    /// it), instead of the token's rate: a game client is one player. 0: no limit.
    pub player_rate_limit_per_min: u32,
    /// Requests a player may send at once before its rate applies.
    pub player_rate_limit_burst: u32,
    /// Most connections open at once; further clients wait in the listen backlog.
    pub max_connections: Count<1, 1_000_000>,
    /// Bound on receiving a request's headers; a slower client is disconnected.
    pub header_timeout_ms: Millis<100, 600_000>,
    /// Connections of the api's second PostgreSQL pool, for reads (strong reads, fallbacks,
    /// the lag measurement); commands use `database.pool_max_size` of their own, so slow or
    /// many reads cannot starve commands. It also bounds how many database reads run at once.
    pub read_pool_max_size: Count<1, 1_000>,
    /// Address of the admin server (`/healthz`, `/readyz`, `/metrics`); the public port
    /// (`listen`) serves only the API. Port 0 picks a free one.
    pub admin_listen: String,
    /// `/readyz` answers ready while the last successful call to PostgreSQL (a heartbeat on a
    /// connection of its own) is at most this old.
    pub readiness_stale_ms: Millis<100, 600_000>,
    /// After SIGTERM, how long the api keeps serving while `/readyz` answers 503 (draining), so
    /// that load balancers take it out before it stops accepting. Then in-flight requests get
    /// `shutdown.grace_ms`.
    pub drain_delay_ms: Millis<0, 600_000>,
    /// Bound on the buffer a connection's request head (request line and headers) may fill;
    /// a larger head is answered 431 and the connection closed.
    pub max_header_bytes: Count<8_192, { 1 << 20 }>,
    /// A connection whose client takes no bytes of its response for this long is closed.
    pub write_timeout_ms: Millis<100, 600_000>,
    /// Most connections open at once from one client address (an IPv6 /64 counts as one
    /// address); further ones are closed at once. Peers in `trusted_proxies` are not capped.
    pub max_connections_per_client: Count<1, 1_000_000>,
    /// Comma-separated CIDRs (`10.0.0.0/8,2001:db8::/32`, or single addresses) of the proxies
    /// whose `X-Forwarded-For` / `Forwarded` headers name the client; from any other peer the
    /// headers are ignored and the peer is the client. Empty: trust none.
    pub trusted_proxies: String,
    /// Score commands are committed in groups (`board/group.rs`): this many groups run at once,
    /// each on one connection of `database.pool_max_size`. A command that finds one of them
    /// idle goes at once, alone; commands that arrive while all are busy leave together.
    pub command_group_workers: Count<1, 1_000>,
    /// Most commands in one group (one transaction); 1 turns grouping off.
    pub command_group_max: Count<1, 10_000>,
    /// Accept `http://` receiver URLs in `POST`/`PATCH /v1/webhooks`. Off: only `https://`
    /// (a webhook carries scores and user ids). For local stacks and tests only; the
    /// dispatcher has its own `dispatcher.allow_http`.
    pub webhook_allow_http: bool,
    /// Accept receiver URLs that name a loopback, private, link-local or other non-public
    /// address outright (`https://10.0.0.5/`, `http://localhost:9000/`). Off: 422
    /// `webhook_private_address`, since the dispatcher would refuse every delivery to them
    /// unless its own `dispatcher.allow_private_addresses`. For local stacks and tests only.
    pub webhook_allow_private_addresses: bool,
    /// The longest long poll of `GET /v1/events` (its `wait`, at most 30 s): a larger `wait`
    /// is cut to this. Its request may take this much longer than `request_timeout_ms`. Lower
    /// it below the idle timeout of the proxies in front of the api.
    pub events_max_wait_ms: Millis<0, 30_000>,
    /// Live updates (`GET /v1/boards/{board}/live`): a board's first N is read at most once
    /// per this interval however often it changes; the changes meanwhile are covered by the
    /// next read.
    pub live_min_interval_ms: Millis<10, 60_000>,
    /// A live stream that sent nothing for this long sends a heartbeat comment (`: hb`), so
    /// proxies neither close nor buffer it. Keep it below their idle timeouts.
    pub live_heartbeat_ms: Millis<100, 300_000>,
    /// While the api's pub/sub connection is down, each board with live streams is read this
    /// often instead (and every message says `"updates":"polling"`).
    pub live_poll_ms: Millis<100, 600_000>,
    /// Most live streams open at once in this process (503 `live_full` past it). Each also
    /// holds one of `max_connections`.
    pub live_max_connections: Count<1, 1_000_000>,
    /// Most live streams open at once from one client address (an IPv6 /64 counts as one;
    /// behind `trusted_proxies`, the forwarded address): 429 `live_client_limit` past it.
    pub live_max_per_client: Count<1, 1_000_000>,
}

impl Default for ApiSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            body_limit_bytes: const { Count::of(16 * 1024) },
            request_timeout_ms: const { Millis::of(10_000) },
            max_lag_ms: const { Millis::of(2_000) },
            freshness_cache_ms: const { Millis::of(100) },
            definition_cache_ms: const { Millis::of(1_000) },
            rate_limit_per_s: 1_000,
            rate_limit_burst: 2_000,
            // Unity's leaderboards allow a player 60 requests a minute.
            player_rate_limit_per_min: 60,
            player_rate_limit_burst: 60,
            max_connections: const { Count::of(10_000) },
            header_timeout_ms: const { Millis::of(5_000) },
            read_pool_max_size: const { Count::of(8) },
            admin_listen: "127.0.0.1:9100".into(),
            readiness_stale_ms: const { Millis::of(10_000) },
            drain_delay_ms: const { Millis::of(5_000) },
            max_header_bytes: const { Count::of(32 * 1024) },
            write_timeout_ms: const { Millis::of(10_000) },
            max_connections_per_client: const { Count::of(256) },
            trusted_proxies: String::new(),
            command_group_workers: const { Count::of(4) },
            command_group_max: const { Count::of(32) },
            webhook_allow_http: false,
            webhook_allow_private_addresses: false,
            events_max_wait_ms: const { Millis::of(30_000) },
            live_min_interval_ms: const { Millis::of(250) },
            live_heartbeat_ms: const { Millis::of(15_000) },
            live_poll_ms: const { Millis::of(3_000) },
            // Room left under max_connections (10,000) for the requests of everyone else.
            live_max_connections: const { Count::of(5_000) },
            live_max_per_client: const { Count::of(16) },
        }
    }
}

impl ApiSettings {
    pub fn listen_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.listen.parse().map_err(|e| invalid("api.listen", e))
    }
    pub fn admin_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.admin_listen
            .parse()
            .map_err(|e| invalid("api.admin_listen", e))
    }
    pub fn trusted_proxies(&self) -> Result<TrustedProxies, ConfigError> {
        TrustedProxies::parse(&self.trusted_proxies).map_err(|e| invalid("api.trusted_proxies", e))
    }
    pub fn readiness_stale(&self) -> Duration {
        self.readiness_stale_ms.get()
    }
    pub fn drain_delay(&self) -> Duration {
        self.drain_delay_ms.get()
    }
    pub fn write_timeout(&self) -> Duration {
        self.write_timeout_ms.get()
    }
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout_ms.get()
    }
    pub fn freshness_cache(&self) -> Duration {
        self.freshness_cache_ms.get()
    }
    pub fn definition_cache(&self) -> Duration {
        self.definition_cache_ms.get()
    }
    pub fn header_timeout(&self) -> Duration {
        self.header_timeout_ms.get()
    }
    pub fn events_max_wait(&self) -> Duration {
        self.events_max_wait_ms.get()
    }
}

/// Who may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadAccess {
    /// Reads need no token.
    Public,
    /// Reads need a token with any scope.
    Token,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AuthSettings {
    /// Bearer tokens as `name=<sha256 hex>@scope[,scope]` entries separated by `;` (see
    /// core's `auth/mod.rs`). Empty: no token exists, and every score command is refused. Never
    /// shown: the digests say who may write.
    pub tokens: Secret,
    pub reads: ReadAccess,
    /// The keys that verify player tokens, `kid=ALG:key` entries separated by `;` (see core's
    /// `auth/player.rs`; `lbctl token player-key` makes one). Empty: no player token is
    /// accepted. Never shown: an HS256 entry is the secret that mints tokens.
    pub player_keys: Secret,
    /// When set, a player token's `aud` must name it; when empty, a token with an `aud` is
    /// refused (it was minted for another service).
    pub player_audience: String,
}

impl Default for AuthSettings {
    fn default() -> Self {
        Self {
            tokens: Secret::default(),
            reads: ReadAccess::Public,
            player_keys: Secret::default(),
            player_audience: String::new(),
        }
    }
}

impl DaemonSection for Sections {
    fn validate(settings: &Settings) -> Result<(), ConfigError> {
        let api = &settings.api;
        api.listen_addr()?;
        api.admin_addr()?;
        api.trusted_proxies()?;
        in_range(
            "api.rate_limit_per_s",
            u64::from(api.rate_limit_per_s),
            0,
            10_000_000,
        )?;
        in_range(
            "api.rate_limit_burst",
            u64::from(api.rate_limit_burst),
            1,
            10_000_000,
        )?;
        in_range(
            "api.player_rate_limit_per_min",
            u64::from(api.player_rate_limit_per_min),
            0,
            10_000_000,
        )?;
        in_range(
            "api.player_rate_limit_burst",
            u64::from(api.player_rate_limit_burst),
            1,
            10_000_000,
        )?;
        TokenTable::parse(&settings.auth.tokens).map_err(|e| invalid("auth.tokens", e))?;
        PlayerKeys::parse(&settings.auth.player_keys, &settings.auth.player_audience)
            .map_err(|e| invalid("auth.player_keys", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Option<HashMap<String, String>> {
        Some(config::env_map(pairs))
    }

    fn load(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        config::load_from::<Sections>(None, env(pairs)).map(|l| l.settings)
    }

    #[test]
    fn defaults_are_valid() {
        assert_eq!(load(&[]).expect("defaults load"), Settings::default());
    }

    #[test]
    fn the_file_sets_the_api_and_the_environment_overrides_it() {
        let dir = std::env::temp_dir().join(format!("lb-api-config-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let file = dir.join("ledgerboard.toml");
        std::fs::write(
            &file,
            "[api]\nlisten = \"0.0.0.0:9000\"\nmax_lag_ms = 5\n[auth]\nreads = \"token\"\n",
        )
        .expect("write file");
        let s = config::load_from::<Sections>(
            Some(&file),
            env(&[("LEDGERBOARD__API__MAX_LAG_MS", "7")]),
        )
        .expect("load")
        .settings;
        assert_eq!(s.api.listen, "0.0.0.0:9000");
        assert_eq!(s.api.max_lag_ms.ms(), 7);
        assert_eq!(s.auth.reads, ReadAccess::Token);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn bad_api_settings_name_the_setting() {
        assert_eq!(
            config::check_refusals::<Sections>(&[
                ("LEDGERBOARD__API__LISTEN", "nowhere", "api.listen"),
                (
                    "LEDGERBOARD__API__ADMIN_LISTEN",
                    "nowhere",
                    "api.admin_listen",
                ),
                (
                    "LEDGERBOARD__API__TRUSTED_PROXIES",
                    "10.0.0.0/33",
                    "api.trusted_proxies",
                ),
                (
                    "LEDGERBOARD__API__MAX_HEADER_BYTES",
                    "1024",
                    "api.max_header_bytes",
                ),
                (
                    "LEDGERBOARD__API__BODY_LIMIT_BYTES",
                    "100",
                    "api.body_limit_bytes",
                ),
                (
                    "LEDGERBOARD__API__RATE_LIMIT_BURST",
                    "0",
                    "api.rate_limit_burst",
                ),
                ("LEDGERBOARD__AUTH__TOKENS", "nonsense", "auth.tokens"),
                (
                    "LEDGERBOARD__AUTH__PLAYER_KEYS",
                    "k1=HS256:c2hvcnQ",
                    "auth.player_keys",
                ),
                ("LEDGERBOARD__AUTH__READS", "sometimes", "reads"),
            ]),
            Ok(())
        );
    }

    /// The api reads no other daemon's section: a value there it would refuse, or a setting
    /// of a newer version, does not stop it.
    #[test]
    fn other_daemons_sections_do_not_stop_the_api() {
        let loaded = config::load_from::<Sections>(
            None,
            env(&[
                ("LEDGERBOARD__PROJECTOR__BATCH_SIZE", "0"),
                ("LEDGERBOARD__PROJECTOR__MODE", "sometimes"),
                ("LEDGERBOARD__RECONCILER__ADMIN_LISTEN", "localhost:9102"),
                // Refused by the projector (a batch could outwait its transaction), not here.
                ("LEDGERBOARD__REDIS__RESPONSE_TIMEOUT_MS", "5000"),
                ("LEDGERBOARD__API__NEW_KNOB", "1"),
            ]),
        )
        .expect("other sections are not read");
        assert_eq!(loaded.settings.api, ApiSettings::default());
        assert_eq!(loaded.ignored, ["api.new_knob"]);
    }
}
