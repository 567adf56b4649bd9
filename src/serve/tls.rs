//! Serving over TLS: the certificate and key from PEM files, offered with
//! ALPN for HTTP/2 and HTTP/1.1, and taken up again when the files change
//! (a renewed certificate, a Secret volume's atomic swap) — new handshakes
//! get the new pair, open connections keep theirs and are never dropped.
//!
//! The files are read again every second and compared with what was
//! loaded: a stat would miss a swap within the same second, and a file
//! watcher a symlink flip in a Secret volume; two small reads a second
//! cost nothing. A pair that does not load (a half-written file, a key
//! that does not match) leaves the serving pair in place until it does.

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// How often the files are compared with the pair being served.
pub const RELOAD_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: no PEM certificate in it")]
    NoCertificate { path: PathBuf },
    #[error("{path}: {source}")]
    Pem {
        path: PathBuf,
        #[source]
        source: pem::Error,
    },
    #[error("client CA {path}: a certificate in it cannot be a CA: {source}")]
    CaCertificate {
        path: PathBuf,
        #[source]
        source: rustls::Error,
    },
    #[error("client CA {path}: {source}")]
    ClientCa {
        path: PathBuf,
        #[source]
        source: rustls::server::VerifierBuilderError,
    },
    #[error("the private key in {key} does not go with the certificate in {cert}: {source}")]
    Key {
        cert: PathBuf,
        key: PathBuf,
        #[source]
        source: rustls::Error,
    },
}

/// Where the serving certificate (with its chain) and its key are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// What serving TLS takes: the serving pair, and the verifier of client
/// certificates when clients may authenticate with one.
#[derive(Debug, Clone)]
pub struct TlsServing {
    pub cert: Arc<ServingCert>,
    pub clients: Option<Arc<dyn ClientCertVerifier>>,
}

/// The files' contents as last read.
#[derive(PartialEq, Eq)]
struct Contents {
    cert: Vec<u8>,
    key: Vec<u8>,
}

/// The pair being served, swapped when the files change.
pub struct ServingCert {
    files: TlsFiles,
    current: RwLock<(Contents, Arc<CertifiedKey>)>,
}

impl std::fmt::Debug for ServingCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServingCert")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl ServingCert {
    /// Loads the pair; an error names the file and what is wrong with it.
    pub fn load(files: &TlsFiles) -> Result<Arc<ServingCert>, TlsError> {
        let contents = read(files)?;
        let key = certified(files, &contents)?;
        Ok(Arc::new(ServingCert {
            files: files.clone(),
            current: RwLock::new((contents, key)),
        }))
    }

    /// A rustls configuration serving this pair, HTTP/2 preferred; with
    /// `clients`, asking clients for a certificate it verifies (one that
    /// does not verify fails the handshake; none is fine).
    pub fn server_config(
        self: &Arc<Self>,
        clients: Option<Arc<dyn ClientCertVerifier>>,
    ) -> Arc<ServerConfig> {
        let builder = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions");
        let builder = match clients {
            Some(v) => builder.with_client_cert_verifier(v),
            None => builder.with_no_client_auth(),
        };
        let mut config = builder.with_cert_resolver(self.clone());
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Arc::new(config)
    }

    /// Reads the files again: `Ok(true)` when they changed and the new pair
    /// is now served, `Ok(false)` when they are as they were; an error when
    /// they changed into something that does not load (the old pair stays).
    pub fn reload(&self) -> Result<bool, TlsError> {
        let contents = read(&self.files)?;
        if self.current.read().expect("not poisoned").0 == contents {
            return Ok(false);
        }
        let key = certified(&self.files, &contents)?;
        *self.current.write().expect("not poisoned") = (contents, key);
        Ok(true)
    }

    /// Reloads every [`RELOAD_EVERY`] for as long as the pair is served
    /// (until every other holder of it is gone).
    pub fn keep_reloading(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            // A failure is logged when it changes, not every second.
            let mut failing = None;
            loop {
                tokio::time::sleep(RELOAD_EVERY).await;
                let Some(cert) = weak.upgrade() else { return };
                match cert.reload() {
                    Ok(true) => {
                        failing = None;
                        tracing::info!(cert = %cert.files.cert.display(), "serving certificate reloaded");
                    }
                    Ok(false) => failing = None,
                    Err(e) => {
                        let text = e.to_string();
                        if failing.as_ref() != Some(&text) {
                            tracing::warn!(error = %text, "serving certificate not reloaded; the previous one is still served");
                        }
                        failing = Some(text);
                    }
                }
            }
        });
    }
}

impl ResolvesServerCert for ServingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().expect("not poisoned").1.clone())
    }
}

/// A verifier of client certificates against the CA certificates of a
/// PEM file (`--client-ca-file`): chains to one of them, valid now, fit
/// for client authentication — what the apiserver's x509 authenticator
/// checks. Clients without a certificate are let through, to be
/// authenticated otherwise. X.509 v1 certificates are refused (webpki
/// reads v3 only); the apiserver takes them.
pub fn client_verifier(path: &Path) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let pem = std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|source| TlsError::Pem {
            path: path.to_path_buf(),
            source,
        })?;
        roots.add(cert).map_err(|source| TlsError::CaCertificate {
            path: path.to_path_buf(),
            source,
        })?;
    }
    if roots.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .allow_unauthenticated()
        .build()
        .map_err(|source| TlsError::ClientCa {
            path: path.to_path_buf(),
            source,
        })
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(files: &TlsFiles) -> Result<Contents, TlsError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    Ok(Contents {
        cert: read(&files.cert)?,
        key: read(&files.key)?,
    })
}

fn certified(files: &TlsFiles, contents: &Contents) -> Result<Arc<CertifiedKey>, TlsError> {
    let pem_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TlsError::Pem { path, source }
    };
    let chain = CertificateDer::pem_slice_iter(&contents.cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_error(&files.cert))?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: files.cert.clone(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(&contents.key).map_err(pem_error(&files.key))?;
    let key_error = |source| TlsError::Key {
        cert: files.cert.clone(),
        key: files.key.clone(),
        source,
    };
    let certified = CertifiedKey::from_der(chain, key, &provider()).map_err(key_error)?;
    // from_der lets a key whose match it cannot tell through; a serving
    // pair that does not match fails every handshake, so refuse it here.
    certified.keys_match().map_err(key_error)?;
    Ok(Arc::new(certified))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate and its key, PEM.
    fn pair() -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn files(name: &str, cert: &str, key: &str) -> TlsFiles {
        let dir =
            std::env::temp_dir().join(format!("kubecache-tls-unit-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = TlsFiles {
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        };
        std::fs::write(&files.cert, cert).unwrap();
        std::fs::write(&files.key, key).unwrap();
        files
    }

    fn served(cert: &ServingCert) -> Vec<u8> {
        cert.current.read().unwrap().1.cert[0].to_vec()
    }

    #[test]
    fn a_pair_that_cannot_serve_is_refused_with_the_file_and_the_reason() {
        let (cert, key) = pair();
        let (_, other_key) = pair();
        let err = |f: &TlsFiles| ServingCert::load(f).unwrap_err().to_string();
        let mismatched = files("mismatched", &cert, &other_key);
        assert!(
            err(&mismatched).contains("does not go with the certificate"),
            "{}",
            err(&mismatched)
        );
        let no_cert = files("no-cert", &key, &key);
        assert!(
            err(&no_cert).contains("no PEM certificate"),
            "{}",
            err(&no_cert)
        );
        let no_key = files("no-key", &cert, &cert);
        assert!(err(&no_key).contains("key.pem"), "{}", err(&no_key));
        let missing = TlsFiles {
            cert: "/nonexistent/cert.pem".into(),
            key: "/nonexistent/key.pem".into(),
        };
        assert!(err(&missing).starts_with("reading /nonexistent/cert.pem"));
        assert!(ServingCert::load(&files("good", &cert, &key)).is_ok());
    }

    #[test]
    fn a_reload_takes_up_a_new_pair_and_keeps_serving_the_old_one_until_one_loads() {
        let (cert, key) = pair();
        let f = files("reload", &cert, &key);
        let serving = ServingCert::load(&f).unwrap();
        let first = served(&serving);
        assert!(!serving.reload().unwrap(), "unchanged files");
        // Half written: the new certificate with the old key.
        let (new_cert, new_key) = pair();
        std::fs::write(&f.cert, &new_cert).unwrap();
        assert!(serving.reload().is_err());
        assert_eq!(served(&serving), first);
        std::fs::write(&f.key, &new_key).unwrap();
        assert!(serving.reload().unwrap());
        assert_ne!(served(&serving), first);
        assert!(!serving.reload().unwrap());
        // ALPN: HTTP/2 first.
        let config = serving.server_config(None);
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }
}
