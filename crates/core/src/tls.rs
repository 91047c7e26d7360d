//! The TLS pieces shared by every connection that leaves the pod (PostgreSQL in `db/tls.rs`,
//! Redis in `projection/store.rs`, OTLP in `telemetry/`): one crypto provider (rustls with
//! ring, no OpenSSL), PEM files read with the setting that named them in every error, and the
//! two certificate verifiers PostgreSQL's `sslmode` needs beyond rustls's own: none at all
//! (`prefer`, `require`) and the chain without the host name (`verify-ca`).
//!
//! A leaf: it imports nothing else from this crate.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// A certificate or key file that cannot be used, named by the setting that gave it.
#[derive(Debug, thiserror::Error)]
#[error("{setting}: {reason}")]
pub struct TlsFileError {
    pub setting: String,
    pub reason: String,
}

fn file_error(setting: &str, path: &Path, reason: impl std::fmt::Display) -> TlsFileError {
    TlsFileError {
        setting: setting.to_owned(),
        reason: format!("{}: {reason}", path.display()),
    }
}

/// The one crypto provider of the process. Also installed as rustls's process default, for
/// the libraries that build their own `ClientConfig` (the redis crate): with one provider
/// compiled in that is what they would pick anyway, and installing it keeps it so should a
/// second one ever be linked.
pub fn provider() -> Arc<CryptoProvider> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // Err only when one is installed already: the same provider, by an earlier call.
    let _ = CryptoProvider::install_default(rustls::crypto::ring::default_provider());
    provider
}

/// Reads a PEM file whole (certificates and keys are small), for libraries that take PEM bytes.
pub fn read_pem(setting: &str, path: &Path) -> Result<Vec<u8>, TlsFileError> {
    std::fs::read(path).map_err(|e| file_error(setting, path, format!("cannot read: {e}")))
}

/// Every certificate in a PEM file; none is an error (the file is not what the setting says).
pub fn certificates(
    setting: &str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsFileError> {
    let pem = read_pem(setting, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(setting, path, format!("not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(file_error(setting, path, "holds no PEM certificate"));
    }
    Ok(certs)
}

/// The private key in a PEM file (PKCS#8, PKCS#1 or SEC1).
pub fn private_key(setting: &str, path: &Path) -> Result<PrivateKeyDer<'static>, TlsFileError> {
    let pem = read_pem(setting, path)?;
    PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|e| file_error(setting, path, format!("no PEM private key: {e}")))
}

/// The trust anchors: the certificates of `ca_file`, or the system's roots when it is `None`.
pub fn roots(setting: &str, ca_file: Option<&Path>) -> Result<RootCertStore, TlsFileError> {
    let mut roots = RootCertStore::empty();
    match ca_file {
        Some(path) => {
            for cert in certificates(setting, path)? {
                roots
                    .add(cert)
                    .map_err(|e| file_error(setting, path, format!("not a CA certificate: {e}")))?;
            }
        }
        None => {
            // Unreadable entries of the system store are skipped: one bad file there must not
            // stop a daemon whose server's root is in another.
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(TlsFileError {
                    setting: setting.to_owned(),
                    reason: "no CA file is set and the system has no root certificates (install ca-certificates, or set the CA file)".into(),
                });
            }
        }
    }
    Ok(roots)
}

/// The server-certificate check of PostgreSQL's weaker modes, which rustls's own verifier (chain
/// and name: `verify-full`) does not offer. Either way the handshake's signatures are checked,
/// so the peer holds the key of the certificate it sent.
#[derive(Debug)]
pub struct PartialVerifier {
    /// None: any certificate is accepted, the connection is encrypted but the server not
    /// authenticated (`prefer` and `require`, like libpq's). Some: the certificate must chain
    /// to one of these roots and be valid now, whatever host it names (`verify-ca`).
    roots: Option<Arc<RootCertStore>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl PartialVerifier {
    /// Accepts any certificate (`prefer`, `require`).
    pub fn any_certificate(provider: &CryptoProvider) -> Self {
        Self {
            roots: None,
            algorithms: provider.signature_verification_algorithms,
        }
    }

    /// Checks the chain, not the name (`verify-ca`).
    pub fn chain_only(roots: RootCertStore, provider: &CryptoProvider) -> Self {
        Self {
            roots: Some(Arc::new(roots)),
            algorithms: provider.signature_verification_algorithms,
        }
    }
}

impl ServerCertVerifier for PartialVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
