//! `rediss://`: the CA and client certificate of `[redis]`, for the single-server pool
//! (`store.rs`) and the cluster client (`cluster.rs`) alike.

use crate::config::RedisSettings;
use crate::tls::TlsFileError;

/// The certificates of `[redis]` in the form the redis crate takes them (PEM bytes). Also
/// makes sure rustls's process-wide provider is ours: the redis crate builds its own config.
pub(super) fn certificates(
    settings: &RedisSettings,
) -> Result<redis::TlsCertificates, TlsFileError> {
    crate::tls::provider();
    let root_cert = if settings.ca_file.is_empty() {
        None
    } else {
        let path = std::path::Path::new(&settings.ca_file);
        // Parsed once here, so a file with no certificate is refused with its setting's name
        // (the redis crate would only say "Unable to parse TLS trust anchors").
        crate::tls::certificates("redis.ca_file", path)?;
        Some(crate::tls::read_pem("redis.ca_file", path)?)
    };
    let client_tls = if settings.client_cert_file.is_empty() {
        None
    } else {
        let cert = std::path::Path::new(&settings.client_cert_file);
        let key = std::path::Path::new(&settings.client_key_file);
        crate::tls::certificates("redis.client_cert_file", cert)?;
        crate::tls::private_key("redis.client_key_file", key)?;
        Some(redis::ClientTlsConfig {
            client_cert: crate::tls::read_pem("redis.client_cert_file", cert)?,
            client_key: crate::tls::read_pem("redis.client_key_file", key)?,
        })
    };
    Ok(redis::TlsCertificates {
        client_tls,
        root_cert,
    })
}
