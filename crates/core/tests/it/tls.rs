//! TLS to PostgreSQL and Redis against private servers that speak only TLS, with certificates
//! made by the test: each `sslmode` does what docs/configuration.md says (verify-full checks
//! the chain and the host, verify-ca only the chain, require nothing, disable is refused by a
//! TLS-only server), the pool's cancel requests work over TLS, and Redis over `rediss://`
//! checks its server's certificate, presents a client certificate when configured, and a plain
//! `redis://` client of a TLS-only server fails within its timeouts.

use std::time::{Duration, Instant};

use ledgerboard_core::config::{DatabaseSettings, Millis, RedisSettings, SslMode};
use ledgerboard_core::db::Database;
use ledgerboard_core::db::tls::connect_params;
use ledgerboard_core::projection::Store;
use ledgerboard_testkit::tls::{
    TestPki, tls_postgres, tls_postgres_present, tls_redis, tls_redis_cluster,
};
use ledgerboard_testkit::{abandon_a_query, query_stopped};

fn database(url: String, ca_file: &std::path::Path) -> DatabaseSettings {
    DatabaseSettings {
        url: url.into(),
        ca_file: ca_file.display().to_string(),
        connect_timeout_ms: Millis::of(5_000),
        ..DatabaseSettings::default()
    }
}

/// Connects once as the daemons do; whether the session is encrypted, or the error's whole
/// chain (rustls's reason is in the source, not in tokio-postgres's own message).
async fn session(settings: &DatabaseSettings) -> Result<bool, String> {
    let params = connect_params(settings, &settings.url).map_err(|e| e.to_string())?;
    let connect = params.config.connect(params.tls);
    let (client, connection) = tokio::time::timeout(Duration::from_secs(20), connect)
        .await
        .map_err(|_| "connect hung".to_owned())?
        .map_err(|e| chain(&e))?;
    tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .map_err(|e| chain(&e))?;
    Ok(row.get(0))
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[tokio::test]
async fn postgres_sslmodes_verify_what_they_say() {
    let pki = TestPki::generate();
    let pg = tls_postgres(&pki);
    let url = |mode: &str| format!("{}?sslmode={mode}", pg.url());

    // The right certificate: verify-full connects, encrypted, through the pool and the
    // migrations too.
    let full = database(url("verify-full"), &pki.ca_file);
    assert_eq!(session(&full).await, Ok(true), "verify-full, right host");
    ledgerboard_core::db::migrate(&full)
        .await
        .expect("migrate over verify-full");
    // The server's statement_timeout must not end the abandoned query before the cancel would.
    let long = DatabaseSettings {
        statement_timeout_ms: Millis::of(120_000),
        ..full.clone()
    };
    let db = Database::connect(&long, "tls-test").expect("pool");
    // A query its caller gives up on is cancelled: the cancel request is a connection of its
    // own, which must use the same TLS (require-or-better: without it there is none).
    let pid = abandon_a_query(&db, Duration::from_millis(300)).await;
    let watcher = Database::connect(&full, "tls-watch").expect("pool");
    let watch = watcher.client().await.expect("connection");
    assert!(
        query_stopped(&watch, pid).await,
        "the abandoned query still runs: the cancel did not reach the server over TLS"
    );
    // The URL's sslrootcert stands in for database.ca_file.
    let mut in_url = database(
        format!(
            "{}&sslrootcert={}",
            url("verify-full"),
            pki.ca_file.display()
        ),
        std::path::Path::new("/nonexistent-ca.pem"),
    );
    assert_eq!(session(&in_url).await, Ok(true), "sslrootcert in the URL");
    // A CA file that is not there stops the connect at once, naming the setting.
    in_url.url = url("verify-full").into();
    let missing = session(&in_url).await.expect_err("no CA file");
    eprintln!("a missing CA file: {missing}");
    assert!(missing.contains("database.ca_file"), "{missing}");

    // A certificate of the right CA for another host name.
    tls_postgres_present(&pg, &pki.wrong_host);
    let wrong = session(&full).await.expect_err("verify-full, wrong host");
    eprintln!("verify-full, certificate for another host: {wrong}");
    assert!(
        wrong.contains("NotValidForName") || wrong.contains("not valid for name"),
        "verify-full must name the host mismatch: {wrong}"
    );
    let ca = database(url("verify-ca"), &pki.ca_file);
    assert_eq!(session(&ca).await, Ok(true), "verify-ca ignores the name");
    let require = database(url("require"), &pki.ca_file);
    assert_eq!(session(&require).await, Ok(true), "require, wrong host");

    // A certificate of a CA nobody trusts: only require (and prefer) still connect.
    tls_postgres_present(&pg, &pki.foreign);
    let unknown = session(&ca).await.expect_err("verify-ca, foreign CA");
    eprintln!("verify-ca, certificate of an untrusted CA: {unknown}");
    assert!(
        unknown.contains("UnknownIssuer") || unknown.contains("unknown issuer"),
        "verify-ca must name the untrusted issuer: {unknown}"
    );
    let foreign_full = session(&full).await.expect_err("verify-full, foreign CA");
    assert!(foreign_full.contains("UnknownIssuer"), "{foreign_full}");
    assert_eq!(session(&require).await, Ok(true), "require, foreign CA");
    let prefer = database(pg.url(), &pki.ca_file);
    assert_eq!(
        connect_params(&prefer, &prefer.url)
            .map(|p| p.ssl_mode)
            .ok(),
        Some(SslMode::Prefer),
        "no sslmode is libpq's default, prefer"
    );
    assert_eq!(
        session(&prefer).await,
        Ok(true),
        "prefer takes the TLS offered"
    );

    // The server takes TLS connections only (hostssl): disable is refused, and says why.
    let disable = database(url("disable"), &pki.ca_file);
    let refused = session(&disable)
        .await
        .expect_err("disable, TLS-only server");
    eprintln!("disable, to a hostssl-only server: {refused}");
    assert!(
        refused.contains("no encryption") || refused.contains("pg_hba.conf"),
        "disable must be refused by the server's hba rules: {refused}"
    );
}

fn redis(url: String, pki: &TestPki, client_cert: bool) -> RedisSettings {
    let mut settings = RedisSettings {
        url: url.into(),
        namespace: format!("tls-{}", uuid::Uuid::new_v4().simple()),
        connect_timeout_ms: Millis::of(2_000),
        response_timeout_ms: Millis::of(2_000),
        ca_file: pki.ca_file.display().to_string(),
        ..RedisSettings::default()
    };
    if client_cert {
        settings.client_cert_file = pki.client.cert_file.display().to_string();
        settings.client_key_file = pki.client.key_file.display().to_string();
    }
    settings
}

/// A ping through the daemons' store, bounded by the test (not the code under test).
async fn ping(settings: &RedisSettings) -> Result<(), String> {
    settings.validate().map_err(|e| e.to_string())?;
    let store = Store::connect(settings).map_err(|e| e.to_string())?;
    match tokio::time::timeout(Duration::from_secs(30), store.ping()).await {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(_) => Err("hung past 30 s: the timeouts did not bound it".into()),
    }
}

#[tokio::test]
async fn redis_over_tls_checks_the_server_and_refuses_plain_clients() {
    let pki = TestPki::generate();
    let server = tls_redis(&pki, false);
    assert!(server.url().starts_with("rediss://"));

    let tls = redis(server.url(), &pki, false);
    assert_eq!(ping(&tls).await, Ok(()), "rediss:// with the CA file");
    // Commands and a script through the store, as the projector's would go.
    let store = Store::connect(&tls).expect("store");
    let mut conn = store.connection().await.expect("connection");
    let _: () = redis::cmd("SET")
        .arg(format!("{}:probe", tls.namespace))
        .arg("1")
        .query_async(&mut conn)
        .await
        .expect("SET over TLS");

    // A plain client of a TLS-only server: an error within the connect and response timeouts.
    let plain = redis(
        server.url().replacen("rediss://", "redis://", 1),
        &pki,
        false,
    );
    let plain = RedisSettings {
        ca_file: String::new(),
        ..plain
    };
    let started = Instant::now();
    let err = ping(&plain)
        .await
        .expect_err("plaintext to a TLS-only port");
    assert!(
        err.contains("reset") || err.contains("closed") || err.contains("broken pipe"),
        "the server drops a client that does not speak TLS: {err}"
    );
    eprintln!(
        "plain client of a TLS-only server, after {:?}: {err}",
        started.elapsed()
    );

    // Only the test CA is trusted: the system's roots do not know it.
    let system_roots = RedisSettings {
        ca_file: String::new(),
        ..tls.clone()
    };
    let untrusted = ping(&system_roots)
        .await
        .expect_err("the test CA is not a system root");
    assert!(untrusted.contains("UnknownIssuer"), "{untrusted}");
    // A CA file that is not one names its setting.
    let bad = pki.path("not-a-ca.pem");
    std::fs::write(&bad, "not PEM").expect("write");
    let bad_ca = RedisSettings {
        ca_file: bad.display().to_string(),
        ..tls.clone()
    };
    let err = ping(&bad_ca)
        .await
        .expect_err("a CA file with no certificate");
    assert!(err.contains("redis.ca_file"), "{err}");
}

#[tokio::test]
async fn redis_presents_the_client_certificate_when_configured() {
    let pki = TestPki::generate();
    let server = tls_redis(&pki, true);
    let without = redis(server.url(), &pki, false);
    let refused = ping(&without)
        .await
        .expect_err("tls-auth-clients yes refuses a client without a certificate");
    eprintln!("without a client certificate: {refused}");
    let with = redis(server.url(), &pki, true);
    assert_eq!(
        ping(&with).await,
        Ok(()),
        "the client certificate is presented"
    );
}

/// Cluster mode over TLS: the client learns the nodes from `rediss://` seeds and reaches every
/// one over TLS with the CA and client certificate (each node requires one), so commands and a
/// pipeline spanning every master's slots work.
#[tokio::test]
async fn a_redis_cluster_over_tls_serves_every_slot() {
    let pki = TestPki::generate();
    let cluster = tls_redis_cluster(&pki);
    let mut settings = redis(cluster.seeds().join(","), &pki, true);
    settings.cluster = true;
    assert!(settings.tls());
    assert_eq!(ping(&settings).await, Ok(()), "the cluster over TLS");
    let store = Store::connect(&settings).expect("cluster store");
    let primaries = store
        .on_each_primary(redis::cmd("PING"))
        .await
        .expect("PING on every primary over TLS");
    assert_eq!(primaries.len(), 3, "{primaries:?}");
    // Keys in many slots: one pipeline, split per slot by the store, over TLS to each node.
    let mut pipe = redis::pipe();
    for i in 0..50 {
        pipe.cmd("SET")
            .arg(format!("{}:k{i}", settings.namespace))
            .arg(i)
            .ignore();
    }
    let mut conn = store.connection().await.expect("connection");
    let _: () = pipe
        .query_async(&mut conn)
        .await
        .expect("a pipeline over every slot");
    let mut read = redis::pipe();
    for i in 0..50 {
        read.cmd("GET").arg(format!("{}:k{i}", settings.namespace));
    }
    let values: Vec<i64> = read.query_async(&mut conn).await.expect("read back");
    assert_eq!(values, (0..50).collect::<Vec<i64>>());
    // Without the client certificate every node refuses.
    let mut anonymous = redis(cluster.seeds().join(","), &pki, false);
    anonymous.cluster = true;
    let refused = ping(&anonymous).await.expect_err("no client certificate");
    eprintln!("cluster without a client certificate: {refused}");
}
