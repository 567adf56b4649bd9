//! Certificates made on the spot (rcgen): a CA of the test's own, serving
//! certificates it issues, and HTTPS clients that trust it alone.

use super::scratch::unique_suffix;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use kubecache::serve::tls::TlsFiles;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A certificate authority of the test's own.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        TestCa { issuer }
    }

    /// A serving certificate for localhost and 127.0.0.1 written to `dir`
    /// (cert.pem with the CA after it, key.pem), as a renewal writes it.
    pub fn issue_into(&self, dir: &Path) -> TlsFiles {
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let files = TlsFiles {
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        };
        // Each written whole and renamed into place, as a Secret volume or
        // a certificate manager swaps them.
        let put = |path: &Path, text: String| {
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, text).unwrap();
            std::fs::rename(&tmp, path).unwrap();
        };
        put(&files.cert, cert.pem() + &self.issuer.pem());
        put(&files.key, key.serialize_pem());
        files
    }

    pub fn pem_file(&self, dir: &Path) -> PathBuf {
        let path = dir.join(format!("ca-{}.pem", unique_suffix()));
        std::fs::write(&path, self.issuer.pem()).unwrap();
        path
    }

    /// A client that trusts this CA alone, speaking HTTP/2 if `h2`, else
    /// HTTP/1.1 (offered through ALPN).
    pub fn client(&self, h2: bool) -> HttpsClient {
        self.client_as(h2, None)
    }

    /// The same, presenting the client certificate of these PEM files.
    pub fn client_as(&self, h2: bool, cert: Option<(&Path, &Path)>) -> HttpsClient {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.issuer.der().clone()).unwrap();
        let config = client_config(roots, cert);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_only();
        let https = if h2 {
            https.enable_http2().build()
        } else {
            https.enable_http1().build()
        };
        Client::builder(TokioExecutor::new()).build(https)
    }
}

/// An HTTPS client (HTTP/2 offered first) that trusts the CA certificates
/// of a PEM file, presenting the client certificate of `cert` if given.
pub fn https_client(ca_pem: &Path, cert: Option<(&Path, &Path)>) -> HttpsClient {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_file_iter(ca_pem).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let config = client_config(roots, cert);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_only()
        .enable_all_versions()
        .build();
    Client::builder(TokioExecutor::new()).build(https)
}

/// A TLS client configuration trusting `roots`, presenting the client
/// certificate of `cert` (PEM files) if given.
fn client_config(
    roots: rustls::RootCertStore,
    cert: Option<(&Path, &Path)>,
) -> rustls::ClientConfig {
    use rustls::pki_types::pem::PemObject;
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    match cert {
        None => config.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = rustls::pki_types::CertificateDer::pem_file_iter(cert)
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = rustls::pki_types::PrivateKeyDer::from_pem_file(key).unwrap();
            config.with_client_auth_cert(chain, key).unwrap()
        }
    }
}
