//! What the proxy presents to the upstream: a bearer token (inline, from a
//! file, or an exec plugin's) and a TLS client certificate (the
//! kubeconfig's, or an exec plugin's). An exec plugin's credential is kept
//! until it expires or the upstream answers 401 to it, then the plugin is
//! run again, as client-go's exec authenticator does; kube-client's auth
//! layer does neither (see exec.rs).
//!
//! kube-client would present a kubeconfig's certificate through rustls's
//! `with_client_auth_cert`, which parses it with webpki and refuses X.509
//! v1 certificates (`UnsupportedCertVersion`): those `openssl x509 -req`
//! makes without extensions, which client-go presents. So certificates
//! are presented here, from a resolver of kubecache's own.

use super::credentials::{BearerToken, CredentialsError, TokenSource};
use super::exec::{usable, ExecConfig, ExecCredential, ExecError};
use http::HeaderValue;
use rustls::client::ResolvesClientCert;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use rustls::SignatureScheme;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("client certificate: {0}")]
    Certificate(#[source] pem::Error),
    #[error("client certificate: no PEM certificate found")]
    NoCertificate,
    #[error("client key: {0}")]
    Key(#[source] pem::Error),
    #[error("client key: no PEM private key found")]
    NoKey,
    #[error("client key: {0}")]
    Signer(#[source] rustls::Error),
    #[error("the client key is not the certificate's")]
    Mismatch,
    #[error(transparent)]
    Token(#[from] CredentialsError),
    #[error(transparent)]
    Exec(#[from] ExecError),
}

/// A client certificate chain and its key, both PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCert {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
}

impl ClientCert {
    /// The chain and key as a TLS handshake signs with them; what does not
    /// parse, or a key that is not the certificate's, is refused (as Go's
    /// tls.X509KeyPair refuses it).
    pub fn certified_key(&self) -> Result<CertifiedKey, AuthError> {
        let certs = CertificateDer::pem_slice_iter(&self.cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(AuthError::Certificate)?;
        if certs.is_empty() {
            return Err(AuthError::NoCertificate);
        }
        let key = PrivateKeyDer::from_pem_slice(&self.key_pem).map_err(|e| match e {
            pem::Error::NoItemsFound => AuthError::NoKey,
            e => AuthError::Key(e),
        })?;
        let signer =
            rustls::crypto::ring::sign::any_supported_type(&key).map_err(AuthError::Signer)?;
        let certified = CertifiedKey::new(certs, signer);
        // Only a mismatch refuses: a certificate webpki cannot parse (X.509
        // v1) is still presented, as client-go presents it.
        match certified.keys_match() {
            Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
                Err(AuthError::Mismatch)
            }
            _ => Ok(certified),
        }
    }
}

/// The certificate every new TLS connection presents; an exec plugin's
/// new certificate replaces it for the connections made after.
#[derive(Debug, Default)]
pub struct CertSlot(RwLock<Option<Arc<CertifiedKey>>>);

impl CertSlot {
    pub fn set(&self, key: CertifiedKey) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(key));
    }
}

impl ResolvesClientCert for CertSlot {
    fn resolve(&self, _: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn has_certs(&self) -> bool {
        self.0.read().unwrap_or_else(|e| e.into_inner()).is_some()
    }
}

/// The credentials the proxy presents itself, as configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    pub token: Option<TokenSource>,
    pub client_cert: Option<ClientCert>,
    pub exec: Option<ExecConfig>,
}

/// The credentials in use.
pub struct Auth {
    token: Option<BearerToken>,
    exec: Option<Exec>,
    pub certs: Arc<CertSlot>,
}

/// What a request was sent with, to tell a 401 to it from one to a
/// credential already replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation(u64);

/// What the authenticator did for a request: its header, and which client
/// certificate new connections present (connections made with an earlier
/// one must go).
pub struct Presented {
    pub header: Option<HeaderValue>,
    pub generation: Generation,
    pub certificate: u64,
}

struct Exec {
    config: ExecConfig,
    current: RwLock<Current>,
    /// One plugin run at a time; requests that find the credential stale
    /// wait for that run rather than start their own.
    running: tokio::sync::Mutex<()>,
}

#[derive(Clone, Default)]
struct Current {
    header: Option<HeaderValue>,
    expires: Option<SystemTime>,
    generation: u64,
    /// Counts the certificates the plugin gave.
    certificate: u64,
    /// No credential yet, or the upstream refused it.
    stale: bool,
}

impl Auth {
    /// The credentials for `c`, shared by every upstream client made with
    /// the same exec plugin, as client-go shares its exec authenticators:
    /// one plugin run serves them all, and a 401 to one replaces the
    /// credential for all.
    pub fn shared(c: &Credentials) -> Result<Arc<Self>, AuthError> {
        type Shared = Vec<(Credentials, std::sync::Weak<Auth>)>;
        static SHARED: std::sync::Mutex<Shared> = std::sync::Mutex::new(Vec::new());
        if c.exec.is_none() {
            return Ok(Arc::new(Auth::new(c)?));
        }
        let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        shared.retain(|(_, a)| a.strong_count() > 0);
        if let Some(a) = shared
            .iter()
            .find(|(k, _)| k == c)
            .and_then(|(_, a)| a.upgrade())
        {
            return Ok(a);
        }
        let a = Arc::new(Auth::new(c)?);
        shared.push((c.clone(), Arc::downgrade(&a)));
        Ok(a)
    }

    pub fn new(c: &Credentials) -> Result<Self, AuthError> {
        let certs = Arc::new(CertSlot::default());
        if let Some(cert) = &c.client_cert {
            certs.set(cert.certified_key()?);
        }
        Ok(Auth {
            token: c.token.as_ref().map(BearerToken::new).transpose()?,
            exec: c.exec.clone().map(|config| Exec {
                config,
                current: RwLock::new(Current {
                    stale: true,
                    ..Current::default()
                }),
                running: tokio::sync::Mutex::new(()),
            }),
            certs,
        })
    }

    /// The credentials to send a request with, running the exec plugin
    /// first if its credential is missing, expired or refused.
    pub async fn present(&self) -> Result<Presented, AuthError> {
        let Some(exec) = &self.exec else {
            return Ok(Presented {
                header: self.token.as_ref().map(BearerToken::header),
                generation: Generation(0),
                certificate: 0,
            });
        };
        let now = SystemTime::now();
        let fresh = |c: &Current| !c.stale && usable(now, c.expires);
        let c = exec.read();
        if fresh(&c) {
            return Ok(c.presented());
        }
        let _running = exec.running.lock().await;
        let c = exec.read();
        if fresh(&c) {
            // Another request ran the plugin meanwhile.
            return Ok(c.presented());
        }
        let cred: ExecCredential = exec.config.run().await?;
        let certificate = match &cred.client_cert {
            Some((cert_pem, key_pem)) => {
                let cert = ClientCert {
                    cert_pem: cert_pem.clone(),
                    key_pem: key_pem.clone(),
                };
                self.certs.set(cert.certified_key()?);
                c.certificate + 1
            }
            None => c.certificate,
        };
        let header = match &cred.token {
            Some(t) => Some(super::credentials::bearer(t)?),
            None => None,
        };
        let next = Current {
            header,
            expires: cred.expires,
            generation: c.generation + 1,
            certificate,
            stale: false,
        };
        *exec.current.write().unwrap_or_else(|e| e.into_inner()) = next.clone();
        tracing::info!(
            token = next.header.is_some(),
            certificate = cred.client_cert.is_some(),
            "exec plugin gave new credentials"
        );
        Ok(next.presented())
    }

    /// The upstream answered 401 to a request sent with `g`: an exec
    /// plugin's credential is run for again by the next request (the
    /// refused request itself is not retried, as in client-go).
    pub fn unauthorized(&self, g: Generation) {
        if let Some(exec) = &self.exec {
            let mut c = exec.current.write().unwrap_or_else(|e| e.into_inner());
            if c.generation == g.0 {
                c.stale = true;
            }
        }
    }
}

impl Exec {
    fn read(&self) -> Current {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Current {
    fn presented(self) -> Presented {
        Presented {
            header: self.header,
            generation: Generation(self.generation),
            certificate: self.certificate,
        }
    }
}

/// A client certificate and key for tests.
#[cfg(test)]
pub(crate) mod testing {
    pub const CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBijCCAS+gAwIBAgIUXADgZEgt/HvRI3Uat5oBezzaX0owCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOa3ViZWNhY2hlLXVuaXQwIBcNMjYxMTIyMDc0MjM5WhgPMjEy
NjEwMjkwNzQyMzlaMBkxFzAVBgNVBAMMDmt1YmVjYWNoZS11bml0MFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAEwyT/s2JI/IQdrS7u56Ia47k9eDrdwG4tzwAcKd0X
fvm6a7H/QEj8bJ+roqpjeHkWS6B38tRS7KcecAyGVRW81KNTMFEwHQYDVR0OBBYE
FOujOPgrnacmH5vxjaMGGg3EXkVzMB8GA1UdIwQYMBaAFOujOPgrnacmH5vxjaMG
Gg3EXkVzMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhALkotHop
t1DEnAoqeuovTjNVPmebU2iTiOM2n9j5695xAiEAm2taa/EbOW9kJHvHuDEZyYfI
K+C2IQfQdjQcWsw6QEY=
-----END CERTIFICATE-----
";
    /// PKCS#8, as `openssl req -newkey` writes it.
    pub const KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgj3zkxJkazdx1TZVu
opWzRQaTVnYwqI4EhwhpDDzNE4WhRANCAATDJP+zYkj8hB2tLu7nohrjuT14Ot3A
bi3PABwp3Rd++bprsf9ASPxsn6uiqmN4eRZLoHfy1FLspx5wDIZVFbzU
-----END PRIVATE KEY-----
";
    /// Another key: not the certificate's.
    pub const OTHER_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgA/cfIy7ECSPemuSp
Px1ZVzo+ySGbBSPrcjplUGmkXMShRANCAASja1k+xYQqZnUGnnalTkxDuG0yoihy
pwvgajAn098xNHakbjeLyc/tTz/qChq2/GTXpYSnxixTgXb7gtREkYz8
-----END PRIVATE KEY-----
";
    /// An X.509 v1 certificate, as `openssl x509 -req` makes one without
    /// extensions, and its key.
    pub const V1_CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBKjCB0QIUDam04M+grkVIy3r7JMFclCspIJ8wCgYIKoZIzj0EAwIwFzEVMBMG
A1UEAwwMa3ViZWNhY2hlLXYxMCAXDTI2MTEyNDA3MDQ1MFoYDzIxMjYxMDMxMDcw
NDUwWjAXMRUwEwYDVQQDDAxrdWJlY2FjaGUtdjEwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAARMEVfHs/x2LyekLYiANhLbX9whxJs1w3D3UdkTbR/1mMcJbCNB+I8x
TNoWkUNHeXyfq5sT8NGcIHvswY3cbkyYMAoGCCqGSM49BAMCA0gAMEUCIAzRsTTa
8KXmGXPMmrg3Jw8fy7AqMf+1vsl1OB2mXxAMAiEAo706c1uP6YLREmSnxtw0++Wk
M+yNimdQ6FoWb1C3ikE=
-----END CERTIFICATE-----
";
    pub const V1_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg6BjLjy/Y2vwKdAOA
kShudhMg5Y+fDlPXcuSnGA5gR4mhRANCAARMEVfHs/x2LyekLYiANhLbX9whxJs1
w3D3UdkTbR/1mMcJbCNB+I8xTNoWkUNHeXyfq5sT8NGcIHvswY3cbkyY
-----END PRIVATE KEY-----
";
}

#[cfg(test)]
mod tests {
    use super::testing::{CERT, KEY, OTHER_KEY};
    use super::*;
    use crate::upstream::exec::testing::plugin;

    fn cert(cert: &str, key: &str) -> ClientCert {
        ClientCert {
            cert_pem: cert.into(),
            key_pem: key.into(),
        }
    }

    #[test]
    fn a_pem_certificate_and_key_make_the_identity_handshakes_present() {
        let slot = CertSlot::default();
        assert!(!slot.has_certs());
        slot.set(cert(CERT, KEY).certified_key().unwrap());
        assert!(slot.has_certs());
        assert_eq!(slot.resolve(&[], &[]).unwrap().cert.len(), 1);
        for (c, k, words) in [
            ("", KEY, "no PEM certificate"),
            (CERT, "", "no PEM private key"),
            (CERT, CERT, "no PEM private key"),
            (
                CERT,
                "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                "client key",
            ),
            (CERT, OTHER_KEY, "not the certificate's"),
        ] {
            let e = cert(c, k).certified_key().unwrap_err();
            assert!(e.to_string().contains(words), "{words}: {e}");
        }
    }

    /// A plugin that counts its runs in a file of its own and answers
    /// `t-<run>`, expiring at `expires`.
    fn counting(name: &str, expires: &str, sleep: &str) -> (Auth, std::path::PathBuf) {
        let count =
            std::env::temp_dir().join(format!("kubecache-auth-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&count);
        let p = plugin(&format!(
            r#"sleep {sleep}; n=$(( $(cat {c} 2>/dev/null || echo 0) + 1 )); echo $n > {c}
echo '{{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{{"token":"t-'$n'","expirationTimestamp":"{expires}"}}}}'"#,
            c = count.display()
        ));
        let auth = Auth::new(&Credentials {
            exec: Some(p),
            ..Credentials::default()
        })
        .unwrap();
        (auth, count)
    }

    fn runs(count: &std::path::Path) -> String {
        std::fs::read_to_string(count).unwrap().trim().to_string()
    }

    #[tokio::test]
    async fn an_exec_token_is_kept_until_the_upstream_refuses_it() {
        let (auth, count) = counting("kept", "2100-01-01T00:00:00Z", "0");
        let first = auth.present().await.unwrap();
        assert_eq!(first.header.unwrap(), "Bearer t-1");
        assert_eq!(first.certificate, 0);
        assert_eq!(auth.present().await.unwrap().generation, first.generation);
        assert_eq!(runs(&count), "1");
        auth.unauthorized(first.generation);
        let second = auth.present().await.unwrap();
        assert_eq!(second.header.unwrap(), "Bearer t-2");
        // A 401 to the credential already replaced changes nothing.
        auth.unauthorized(first.generation);
        assert_eq!(auth.present().await.unwrap().generation, second.generation);
        assert_eq!(runs(&count), "2");
    }

    #[test]
    fn clients_of_one_exec_plugin_share_its_credentials() {
        let with = |script: &str| Credentials {
            exec: Some(plugin(script)),
            ..Credentials::default()
        };
        let a = Auth::shared(&with("echo a")).unwrap();
        let b = Auth::shared(&with("echo a")).unwrap();
        let c = Auth::shared(&with("echo c")).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        // Once the last client is gone, the next starts afresh.
        let weak = Arc::downgrade(&a);
        drop((a, b));
        assert!(weak.upgrade().is_none());
    }

    #[tokio::test]
    async fn an_expired_exec_token_is_run_for_again() {
        let (auth, count) = counting("expired", "2020-01-01T00:00:00Z", "0");
        assert_eq!(auth.present().await.unwrap().header.unwrap(), "Bearer t-1");
        assert_eq!(auth.present().await.unwrap().header.unwrap(), "Bearer t-2");
        assert_eq!(runs(&count), "2");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_that_find_no_credential_share_one_plugin_run() {
        let (auth, count) = counting("shared", "2100-01-01T00:00:00Z", "0.3");
        let auth = Arc::new(auth);
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let a = auth.clone();
                tokio::spawn(async move { a.present().await.unwrap().header.unwrap() })
            })
            .collect();
        for t in tasks {
            assert_eq!(t.await.unwrap(), "Bearer t-1");
        }
        assert_eq!(runs(&count), "1");
    }

    #[tokio::test]
    async fn an_exec_certificate_is_presented_by_new_connections() {
        // The data fields hold PEM text, not base64.
        let p = plugin(&format!(
            "printf '%s' '{{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"status\":{{\"clientCertificateData\":\"{}\",\"clientKeyData\":\"{}\"}}}}'",
            CERT.replace('\n', "\\n"),
            KEY.replace('\n', "\\n")
        ));
        let auth = Auth::new(&Credentials {
            exec: Some(p),
            ..Credentials::default()
        })
        .unwrap();
        assert!(!auth.certs.has_certs());
        let p = auth.present().await.unwrap();
        assert_eq!(p.certificate, 1);
        assert_eq!(p.header, None);
        assert!(auth.certs.has_certs());
        assert_eq!(auth.present().await.unwrap().certificate, 1);
    }
}
