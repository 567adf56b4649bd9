//! Who a verified client certificate names, as the apiserver's x509
//! authenticator reads it (`CommonNameUserConversion`): the subject's
//! common name is the user (the last one, as Go's `pkix.Name` keeps it),
//! its organizations the groups. A certificate without a common name
//! authenticates nobody, and the request is then judged by its other
//! credentials.

use crate::request::UserInfo;
use x509_parser::prelude::{FromDer, X509Certificate};

/// The user of a chain's end-entity certificate (DER), once TLS verified
/// it against the client CA.
pub fn user_of(end_entity: &[u8]) -> Option<UserInfo> {
    let (_, cert) = X509Certificate::from_der(end_entity).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .filter_map(|a| a.as_str().ok())
        .last()?
        .to_string();
    if name.is_empty() {
        return None;
    }
    let groups = subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok())
        .map(str::to_string)
        .collect();
    Some(UserInfo::authenticated(name, String::new(), groups))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};

    fn cert(subject: &[(DnType, &str)]) -> Vec<u8> {
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        for (t, v) in subject {
            dn.push(t.clone(), *v);
        }
        params.distinguished_name = dn;
        let key = KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn the_common_name_is_the_user_and_the_organizations_are_its_groups() {
        // (Several organizations are read in tests/authorize.rs, from
        // openssl's certificates: rcgen keeps one of each kind.)
        let u = user_of(&cert(&[
            (DnType::OrganizationName, "team-a"),
            (DnType::CommonName, "carol"),
        ]))
        .unwrap();
        assert_eq!(u.name, "carol");
        assert_eq!(u.groups, ["team-a", "system:authenticated"]);
        assert_eq!(user_of(&cert(&[(DnType::OrganizationName, "x")])), None);
        assert_eq!(user_of(b"not a certificate"), None);
    }
}
