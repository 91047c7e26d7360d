//! How every PostgreSQL session of a daemon or `lbctl` connects: the URL's `sslmode` and the
//! CA file turned into tokio-postgres's config and a rustls connector. The one place this is
//! built; the pool, its cancel requests, the migrations and the projectors' LISTEN session
//! all take it from [`connect_params`].
//!
//! | `sslmode` | TLS | certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `prefer` (default) | if the server offers it | not checked |
//! | `require` | always | not checked |
//! | `verify-ca` | always | chains to the CA; any host name |
//! | `verify-full` | always | chains to the CA and names the host |
//!
//! tokio-postgres itself decides whether TLS is tried (it gets `disable`, `prefer` or
//! `require`); the verifier decides what a certificate must prove.

use std::path::Path;
use std::sync::Arc;

use rustls::ClientConfig;
use rustls::client::danger::ServerCertVerifier;
pub use tokio_postgres_rustls::MakeRustlsConnect;

use super::errors::StoreError;
use crate::config::{DatabaseSettings, SslMode, parse_postgres_target};
use crate::tls::{PartialVerifier, TlsFileError};

/// What connecting to one PostgreSQL URL takes.
#[derive(Clone)]
pub struct ConnectParams {
    pub config: tokio_postgres::Config,
    pub tls: MakeRustlsConnect,
    pub ssl_mode: SslMode,
}

/// The config and connector for `url` (`database.url` or `database.direct_url`): the CA file
/// is the URL's `sslrootcert`, else `database.ca_file`, else the system's roots. Files are read
/// here, so a missing or unreadable CA stops the caller at once, naming the setting.
pub fn connect_params(settings: &DatabaseSettings, url: &str) -> Result<ConnectParams, StoreError> {
    let target = parse_postgres_target(url).map_err(|e| StoreError::Internal(e.to_string()))?;
    let ca_file = match (&target.root_cert, settings.ca_file.as_str()) {
        (Some(path), _) => Some(("database.url sslrootcert", Path::new(path.as_str()))),
        (None, "") => None,
        (None, path) => Some(("database.ca_file", Path::new(path))),
    };
    let tls = connector(target.ssl_mode, ca_file)
        .map_err(|e| StoreError::Internal(format!("TLS to PostgreSQL: {e}")))?;
    Ok(ConnectParams {
        config: target.config,
        tls,
        ssl_mode: target.ssl_mode,
    })
}

/// The rustls connector for `mode`. `disable` gets one too (tokio-postgres's `connect` takes
/// one either way) that is never used.
pub fn connector(
    mode: SslMode,
    ca_file: Option<(&str, &Path)>,
) -> Result<MakeRustlsConnect, TlsFileError> {
    let provider = crate::tls::provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsFileError {
            setting: "TLS".into(),
            reason: e.to_string(),
        })?;
    let (setting, path) = match ca_file {
        Some((setting, path)) => (setting, Some(path)),
        None => ("database.ca_file", None),
    };
    let config = match mode {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => {
            let verifier: Arc<dyn ServerCertVerifier> =
                Arc::new(PartialVerifier::any_certificate(&provider));
            builder
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth()
        }
        SslMode::VerifyCa => {
            let verifier: Arc<dyn ServerCertVerifier> = Arc::new(PartialVerifier::chain_only(
                crate::tls::roots(setting, path)?,
                &provider,
            ));
            builder
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth()
        }
        SslMode::VerifyFull => builder
            .with_root_certificates(crate::tls::roots(setting, path)?)
            .with_no_client_auth(),
    };
    Ok(MakeRustlsConnect::new(config))
}
