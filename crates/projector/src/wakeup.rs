//! LISTEN for the NOTIFY sent after commands commit (core's `db/wakeup.rs`), so an idle
//! projector claims within milliseconds of a commit without polling hard. A watch channel carries a counter: a worker
//! marks the value it has seen before it claims, so a notification that arrives during its
//! batch is not lost; it claims again at once instead of sleeping.
//!
//! The listener holds one direct session of its own (LISTEN is session state: it must not go
//! through a transaction pooler). When that session breaks, the workers fall back to their
//! poll interval until it is back.

use std::time::Duration;

use ledgerboard_core::backoff::Backoff;
use ledgerboard_core::config::DatabaseSettings;
use ledgerboard_core::db::wakeup::OUTBOX_CHANNEL;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_postgres::AsyncMessage;
use tokio_util::sync::CancellationToken;

pub fn spawn(
    settings: &DatabaseSettings,
    cancel: CancellationToken,
) -> (watch::Receiver<u64>, JoinHandle<()>) {
    let (tx, rx) = watch::channel(0_u64);
    let settings = settings.clone();
    let handle = tokio::spawn(async move { listen(settings, tx, cancel).await });
    (rx, handle)
}

async fn listen(settings: DatabaseSettings, tx: watch::Sender<u64>, cancel: CancellationToken) {
    let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(10));
    while !cancel.is_cancelled() {
        match listen_once(&settings, &tx, &cancel).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(error = %e, retry_in = ?backoff.current(), "LISTEN session lost; polling until it is back");
            }
        }
        if !backoff.wait(&cancel).await {
            return;
        }
    }
}

/// One session: connect, LISTEN, forward notifications until the session ends (Err) or
/// shutdown (Ok).
async fn listen_once(
    settings: &DatabaseSettings,
    tx: &watch::Sender<u64>,
    cancel: &CancellationToken,
) -> Result<(), String> {
    let params = ledgerboard_core::db::tls::connect_params(settings, settings.session_url())
        .map_err(|e| e.to_string())?;
    let mut pg = params.config;
    pg.connect_timeout(settings.connect_timeout())
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(15))
        .application_name("ledgerboard-projector-listen");
    let (client, mut connection) = pg.connect(params.tls).await.map_err(|e| e.to_string())?;
    let forward = tx.clone();
    let mut driver = tokio::spawn(async move {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(_))) => forward.send_modify(|n| *n += 1),
                Some(Ok(_)) => {}
                Some(Err(e)) => return e.to_string(),
                None => return "connection closed".to_owned(),
            }
        }
    });
    let listen = tokio::time::timeout(
        settings.round_trip_timeout(),
        client.batch_execute(&format!("LISTEN {OUTBOX_CHANNEL}")),
    )
    .await;
    match listen {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            driver.abort();
            return Err(e.to_string());
        }
        Err(_) => {
            driver.abort();
            return Err("LISTEN timed out".into());
        }
    }
    tracing::debug!("listening for outbox notifications");
    // Rows may have been committed while no session listened: wake the workers once.
    tx.send_modify(|n| *n += 1);
    let result = tokio::select! {
        _ = cancel.cancelled() => { driver.abort(); Ok(()) }
        ended = &mut driver => Err(ended.unwrap_or_else(|e| e.to_string())),
    };
    drop(client);
    result
}
