//! Certificates made by the test (rcgen), and the TLS-only servers they go with: a private
//! PostgreSQL cluster with `ssl = on` and a private TLS-only redis-server. Nothing here touches
//! the shared servers.

use std::path::PathBuf;

use ledgerboard_harness::{PostgresServer, RedisCluster, RedisServer, RedisTls};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// A certificate and its key, as PEM text and as files in the [`TestPki`]'s folder.
pub struct Pem {
    pub cert: String,
    pub key: String,
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

/// A test CA and what it signed, written to a temporary folder (deleted on drop):
/// - `server`: for `127.0.0.1` and `localhost`, what the servers present;
/// - `wrong_host`: the same CA, for `wrong-host.invalid` only (verify-full must refuse it);
/// - `client`: a client certificate (for Redis's `tls-auth-clients`);
/// - `foreign`: for `127.0.0.1`, signed by another CA that nobody trusts.
pub struct TestPki {
    dir: PathBuf,
    pub ca_pem: String,
    pub ca_file: PathBuf,
    pub server: Pem,
    pub wrong_host: Pem,
    pub client: Pem,
    pub foreign: Pem,
}

fn ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().expect("CA key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params.self_signed(&key).expect("CA certificate");
    (cert.pem(), Issuer::new(params, key))
}

impl TestPki {
    pub fn generate() -> TestPki {
        let dir = std::env::temp_dir().join(format!("lbtls-{}", crate::unique_suffix()));
        std::fs::create_dir_all(&dir).expect("certificate folder");
        let (ca_pem, issuer) = ca("ledgerboard test CA");
        let (_, foreign_issuer) = ca("a CA nobody trusts");
        let ca_file = dir.join("ca.pem");
        std::fs::write(&ca_file, &ca_pem).expect("write the CA");
        let leaf = |name: &str,
                    sans: &[&str],
                    usage: Vec<ExtendedKeyUsagePurpose>,
                    issuer: &Issuer<'_, KeyPair>| {
            let key = KeyPair::generate().expect("key");
            let sans: Vec<String> = sans.iter().map(|s| (*s).to_owned()).collect();
            let mut params = CertificateParams::new(sans).expect("params");
            params.distinguished_name.push(DnType::CommonName, name);
            params.extended_key_usages = usage;
            let cert = params.signed_by(&key, issuer).expect("certificate");
            let pem = Pem {
                cert: cert.pem(),
                key: key.serialize_pem(),
                cert_file: dir.join(format!("{name}.crt")),
                key_file: dir.join(format!("{name}.key")),
            };
            std::fs::write(&pem.cert_file, &pem.cert).expect("write a certificate");
            std::fs::write(&pem.key_file, &pem.key).expect("write a key");
            pem
        };
        // Servers present their certificate as clients too: a cluster node on the bus.
        let server_usage = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        TestPki {
            server: leaf(
                "server",
                &["127.0.0.1", "localhost"],
                server_usage.clone(),
                &issuer,
            ),
            wrong_host: leaf(
                "wrong-host",
                &["wrong-host.invalid"],
                server_usage.clone(),
                &issuer,
            ),
            client: leaf(
                "client",
                &["ledgerboard-client"],
                vec![ExtendedKeyUsagePurpose::ClientAuth],
                &issuer,
            ),
            foreign: leaf("foreign", &["127.0.0.1"], server_usage, &foreign_issuer),
            ca_pem,
            ca_file,
            dir,
        }
    }

    /// A file in this PKI's folder (for a test's own broken file).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for TestPki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A private PostgreSQL cluster that accepts only TLS connections over TCP (`hostssl` in
/// `pg_hba.conf`), presenting `pki.server`. [`tls_postgres_present`] swaps the certificate.
pub fn tls_postgres(pki: &TestPki) -> PostgresServer {
    PostgresServer::start_with(|pg| {
        install_server_cert(pg, &pki.server)?;
        pg.configure(&[
            "ssl = on",
            "ssl_cert_file = 'server.crt'",
            "ssl_key_file = 'server.key'",
        ])?;
        pg.set_hba(
            "local all all trust\n\
             hostssl all all 127.0.0.1/32 trust\n\
             hostnossl all all 127.0.0.1/32 reject\n",
        )
    })
    .unwrap_or_else(|e| panic!("a TLS PostgreSQL cluster: {e}"))
}

fn install_server_cert(pg: &PostgresServer, pem: &Pem) -> std::io::Result<()> {
    pg.install_file("server.crt", pem.cert.as_bytes())?;
    pg.install_file("server.key", pem.key.as_bytes())?;
    Ok(())
}

/// Makes the cluster present `pem` from now on (PostgreSQL reloads its certificate on SIGHUP).
pub fn tls_postgres_present(pg: &PostgresServer, pem: &Pem) {
    install_server_cert(pg, pem).expect("install the certificate");
    pg.ctl(&["reload"]).expect("pg_ctl reload");
    // The reload is a signal: the postmaster reads the files soon after pg_ctl returns. Each
    // new connection's child then has the new certificate; give the postmaster a moment.
    std::thread::sleep(std::time::Duration::from_millis(500));
}

fn redis_tls(pki: &TestPki, require_client_cert: bool) -> RedisTls {
    RedisTls {
        cert_file: pki.server.cert_file.clone(),
        key_file: pki.server.key_file.clone(),
        ca_file: pki.ca_file.clone(),
        require_client_cert,
        client_cert_file: pki.client.cert_file.clone(),
        client_key_file: pki.client.key_file.clone(),
    }
}

/// A private redis-server that speaks only TLS, presenting `pki.server`. With
/// `require_client_cert`, a client must present a certificate signed by the test CA.
pub fn tls_redis(pki: &TestPki, require_client_cert: bool) -> RedisServer {
    RedisServer::start_tls(redis_tls(pki, require_client_cert))
        .unwrap_or_else(|e| panic!("a TLS-only redis-server: {e}"))
}

/// A private Redis Cluster (3 masters, 3 replicas) whose nodes speak only TLS
/// (`tls-cluster yes`) and require a client certificate of the test CA.
pub fn tls_redis_cluster(pki: &TestPki) -> RedisCluster {
    RedisCluster::start_tls(redis_tls(pki, true))
        .unwrap_or_else(|e| panic!("a TLS-only Redis Cluster: {e}"))
}
