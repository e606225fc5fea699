//! One Keystone login: the HTTP client, the identity (our token cache: [`crate::keystone`]),
//! the session's endpoint selection.

use std::collections::HashMap;
use std::time::Duration;

use osauth::common::IdOrName;
use osauth::{ErrorKind, InterfaceType, Session};

use crate::credentials::{Credentials, Interface};
use crate::keystone::{Identity, Keystone};
use crate::tls::{Error as TlsError, Tls};

/// Why no session could be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The credentials cannot be used as given (a key missing, unsupported, unreadable):
    /// found before any request.
    #[error("{0}")]
    Credentials(String),
    /// Keystone refused the credentials.
    #[error("{0}")]
    Auth(#[source] osauth::Error),
    /// The TLS handshake with Keystone failed; one line saying why and what fixes it.
    #[error("{0}")]
    Tls(String),
    /// Keystone could not be reached or answered otherwise.
    #[error("{0}")]
    Call(#[source] osauth::Error),
}

/// The ways to log in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Password,
    Token,
    ApplicationCredential,
}

/// Authenticates once and returns a session bound to region, interface and endpoint overrides;
/// it renews its token itself (`keystone.rs`). Each request is bounded by `timeout` (plus a
/// margin: callers bound their calls themselves, and can then say it was a timeout).
pub async fn connect(credentials: &Credentials, timeout: Duration) -> Result<Session, Error> {
    let invalid = Error::Credentials;
    let c = credentials;
    let client = http_client(c, timeout)?;
    let probe = client.clone();
    let auth_url = c.auth_url.clone().ok_or_else(|| invalid(not_set(c, "auth-url")))?;
    if c.trust_id.is_some() {
        return Err(invalid(format!("{} (trusts) is not supported", c.key("trust-id"))));
    }
    let identity = match method(c)? {
        Method::ApplicationCredential => {
            let secret = (c.application_credential_secret.clone())
                .ok_or_else(|| invalid(not_set(c, "application-credential-secret")))?;
            let (credential, user_id) =
                match (&c.application_credential_id, &c.application_credential_name) {
                    (Some(id), _) => (IdOrName::from_id(id.clone()), None),
                    (None, Some(name)) => {
                        let user = c.user_id.clone().ok_or_else(|| {
                            invalid(format!(
                                "{} needs {}",
                                c.key("application-credential-name"),
                                c.key("user-id")
                            ))
                        })?;
                        (IdOrName::from_name(name.clone()), Some(user))
                    }
                    (None, None) => {
                        return Err(invalid(format!(
                            "{} needs {} or {}",
                            c.key("application-credential-secret"),
                            c.key("application-credential-id"),
                            c.key("application-credential-name")
                        )));
                    }
                };
            // An application credential carries its own scope.
            (Identity::ApplicationCredential { credential, user_id, secret }, None)
        }
        Method::Token => {
            let token = c.token.clone().ok_or_else(|| invalid(not_set(c, "token")))?;
            (Identity::Token(token), project_scope(c))
        }
        Method::Password => {
            let password = c.password.clone().ok_or_else(|| invalid(not_set(c, "password")))?;
            let user = c.username.clone().ok_or_else(|| {
                invalid(format!(
                    "password authentication needs {} ({} alone is not supported)",
                    c.key("username"),
                    c.key("user-id")
                ))
            })?;
            if c.user_domain_id.is_some() && c.user_domain_name.is_none() {
                return Err(invalid(format!(
                    "{} is not supported; set {}",
                    c.key("user-domain-id"),
                    c.key("user-domain-name")
                )));
            }
            let domain = (c.user_domain_name.clone())
                .or_else(|| c.domain_name.clone())
                .unwrap_or_else(|| "Default".to_owned());
            (Identity::Password { user, domain, password }, project_scope(c))
        }
    };
    let keystone = Keystone::new(&auth_url, identity.0, identity.1)
        .map_err(|e| invalid(format!("{} {e}", c.key("auth-url"))))?;
    let session = Session::new_with_client(client, keystone).await;
    let mut session = match session {
        Ok(session) => session,
        Err(e) if matches!(e.kind(), ErrorKind::AuthenticationFailed | ErrorKind::AccessDenied) => {
            return Err(Error::Auth(e));
        }
        Err(e) => {
            if let Some(line) = ccm_tls_explain::diagnose(&probe, &auth_url, c.origin.trust()).await
            {
                return Err(Error::Tls(line));
            }
            return Err(Error::Call(e));
        }
    };
    session = session.with_endpoint_overrides(endpoint_overrides(c)?);
    if let Some(region) = &c.region {
        session.set_region(region.clone());
    }
    session.set_endpoint_interface(match c.interface {
        Interface::Public => InterfaceType::Public,
        Interface::Internal => InterfaceType::Internal,
        Interface::Admin => InterfaceType::Admin,
    });
    Ok(session)
}

fn not_set(c: &Credentials, key: &str) -> String {
    format!("{} is not set", c.key(key))
}

/// clouds.yaml's `auth_type` when given; else an application credential secret, a token or a
/// password, in that order (upstream's CCM order).
fn method(c: &Credentials) -> Result<Method, Error> {
    match c.auth_type.as_deref() {
        Some("password" | "v3password") => Ok(Method::Password),
        Some("token" | "v3token") => Ok(Method::Token),
        Some("v3applicationcredential") => Ok(Method::ApplicationCredential),
        Some(other) => Err(Error::Credentials(format!(
            "{} {other} is not supported (password, v3token, v3applicationcredential)",
            c.key("auth-type")
        ))),
        None if c.application_credential_secret.is_some() => Ok(Method::ApplicationCredential),
        None if c.token.is_some() => Ok(Method::Token),
        None if c.password.is_some() => Ok(Method::Password),
        None => Err(Error::Credentials(
            "no password, token or application credential is set".to_owned(),
        )),
    }
}

/// The project and its domain: the project's own domain, else the shared `domain-*`, else
/// `Default` for a project given by name (gophercloud's and openstacksdk's fallbacks).
fn project_scope(c: &Credentials) -> Option<(IdOrName, Option<IdOrName>)> {
    let project = match (&c.project_id, &c.project_name) {
        (Some(id), _) => IdOrName::from_id(id.clone()),
        (None, Some(name)) => IdOrName::from_name(name.clone()),
        (None, None) => return None,
    };
    let domain = (c.project_domain_id.clone().map(IdOrName::from_id))
        .or_else(|| c.project_domain_name.clone().map(IdOrName::from_name))
        .or_else(|| c.domain_id.clone().map(IdOrName::from_id))
        .or_else(|| c.domain_name.clone().map(IdOrName::from_name))
        .or_else(|| c.project_name.as_ref().map(|_| IdOrName::from_name("Default")));
    Some((project, domain))
}

/// The overrides by service type, under both spellings osauth may look up (`load_balancer`,
/// `load-balancer`).
fn endpoint_overrides(c: &Credentials) -> Result<HashMap<String, reqwest::Url>, Error> {
    let mut overrides = HashMap::new();
    for (service, url) in &c.endpoint_overrides {
        let url = reqwest::Url::parse(url).map_err(|e| {
            Error::Credentials(format!("{service}_endpoint_override {url:?} is not a URL: {e}"))
        })?;
        overrides.insert(service.replace('_', "-"), url.clone());
        overrides.insert(service.clone(), url);
    }
    Ok(overrides)
}

/// `tls` also trusting the CA bundle `pem` (`what` names it in errors); a bundle without a
/// certificate is an error.
fn trust(tls: &mut Tls, what: &str, pem: &[u8]) -> Result<(), Error> {
    tls.trust(pem).map_err(|e| match e {
        TlsError::Empty => Error::Credentials(format!("{what}: no certificate found")),
        TlsError::Pem(e) => Error::Credentials(format!("{what} is not a PEM bundle: {e}")),
        TlsError::Root(e) => {
            Error::Credentials(format!("{what}: a certificate cannot be trusted: {e}"))
        }
    })
}

/// The HTTP client: timeouts, every certificate of each CA bundle (rustls trusts the web roots
/// only), verification off on request (with a warning), the client certificate (any X.509
/// version: [`crate::tls`]).
fn http_client(c: &Credentials, timeout: Duration) -> Result<reqwest::Client, Error> {
    let invalid = Error::Credentials;
    let mut tls = Tls::new();
    if let Some(path) = &c.ca_file {
        let what = format!("{} {path}", c.key("ca-file"));
        let pem = std::fs::read(path).map_err(|e| invalid(format!("{what}: {e}")))?;
        trust(&mut tls, &what, &pem)?;
    }
    let secret_cacert = match c.origin {
        crate::Origin::CloudConf => "the Secret's cacert",
        crate::Origin::CloudsYaml => "its cacert",
    };
    for (what, pem) in [(secret_cacert, &c.ca_bundle), ("additionalTrustBundle", &c.trust_bundle)] {
        if let Some(pem) = pem {
            trust(&mut tls, what, pem.as_bytes())?;
        }
    }
    if c.tls_insecure {
        match (c.origin, &c.cloud) {
            (crate::Origin::CloudsYaml, Some(cloud)) => tracing::warn!(
                "cloud {cloud:?} has verify: false: the cloud's TLS certificates are not verified"
            ),
            (crate::Origin::CloudsYaml, None) => {
                tracing::warn!("verify: false: the cloud's TLS certificates are not verified")
            }
            (crate::Origin::CloudConf, _) => tracing::warn!(
                "tls-insecure = true: the certificates of OpenStack's endpoints are not verified"
            ),
        }
        tls.insecure();
    }
    if let (Some(cert), Some(key)) = (&c.cert_file, &c.key_file) {
        let read = |name: &str, path: &str| {
            std::fs::read(path).map_err(|e| invalid(format!("{} {path}: {e}", c.key(name))))
        };
        let identity = ccm_tls_explain::certified_key::from_pem(
            &read("cert-file", cert)?,
            &read("key-file", key)?,
        )
        .map_err(|e| {
            let (cert_key, key_key) = (c.key("cert-file"), c.key("key-file"));
            invalid(format!("{cert_key} {cert}, {key_key} {key}: {}", ccm_tls_explain::chain(&e)))
        })?;
        tls.present(identity);
    }
    // A backstop only: callers bound their calls with their own timeout, which can report a
    // timeout as such (osauth folds reqwest's timeout into a generic protocol error).
    reqwest::Client::builder()
        .timeout(timeout + Duration::from_secs(5))
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .use_preconfigured_tls(tls.client_config())
        .build()
        .map_err(|e| invalid(format!("HTTP client: {e}")))
}

#[cfg(test)]
mod tests;
