//! Keystone login from [`Credentials`]: password, application credential or token; private CA,
//! `tls-insecure`, client certificate, region and interface.

use std::time::Duration;

use osauth::common::IdOrName;
use osauth::identity::{ApplicationCredential, Password, Token};
use osauth::{ErrorKind, InterfaceType, Session};
use secrecy::ExposeSecret;

use super::{Error, Result};
use crate::config::{Credentials, EndpointInterface};

/// How the controller's trust settings are named in a TLS error.
const TRUST: ccm_tls_explain::Settings = ccm_tls_explain::Settings {
    ca: "set [Global] ca-file (cacert in clouds.yaml) to",
    insecure: Some("tls-insecure = true"),
};

/// Authenticates once with these credentials and returns a session bound to region and interface.
pub async fn connect(credentials: &Credentials, timeout: Duration) -> Result<Session> {
    let client = http_client(credentials, timeout)?;
    let probe = client.clone();
    let auth_url = credentials
        .auth_url
        .clone()
        .ok_or_else(|| Error::Credentials("auth-url is not set".to_owned()))?;
    if credentials.trust_id.is_some() {
        return Err(Error::Credentials("trust-id (trusts) is not supported".to_owned()));
    }
    let bad = |e: osauth::Error| Error::Credentials(e.to_string());
    let session = if let Some(secret) = &credentials.application_credential_secret {
        let secret = secret.expose_secret().to_owned();
        let auth = match (
            &credentials.application_credential_id,
            &credentials.application_credential_name,
        ) {
            (Some(id), _) => {
                ApplicationCredential::new(&auth_url, id.clone(), secret).map_err(bad)?
            }
            (None, Some(name)) => {
                let user = credentials.user_id.clone().ok_or_else(|| {
                    Error::Credentials("application-credential-name needs user-id".to_owned())
                })?;
                ApplicationCredential::with_user_id(&auth_url, name.clone(), secret, user)
                    .map_err(bad)?
            }
            (None, None) => {
                return Err(Error::Credentials(
                    "application-credential-secret needs application-credential-id or -name"
                        .to_owned(),
                ));
            }
        };
        Session::new_with_client(client, auth).await
    } else if let Some(token) = &credentials.token {
        let mut auth = Token::new(&auth_url, token.expose_secret().to_owned()).map_err(bad)?;
        if let Some((project, domain)) = project_scope(credentials) {
            auth.set_project_scope(project, domain);
        }
        Session::new_with_client(client, auth).await
    } else if let Some(password) = &credentials.password {
        let user = credentials.username.clone().ok_or_else(|| {
            Error::Credentials(
                "password authentication needs username (user-id alone is not supported)"
                    .to_owned(),
            )
        })?;
        if credentials.user_domain_id.is_some() && credentials.user_domain_name.is_none() {
            return Err(Error::Credentials(
                "user-domain-id is not supported; set user-domain-name".to_owned(),
            ));
        }
        let domain = (credentials.user_domain_name.clone())
            .or_else(|| credentials.domain_name.clone())
            .unwrap_or_else(|| "Default".to_owned());
        let mut auth = Password::new(&auth_url, user, password.expose_secret().to_owned(), domain)
            .map_err(bad)?;
        if let Some((project, domain)) = project_scope(credentials) {
            auth.set_project_scope(project, domain);
        }
        Session::new_with_client(client, auth).await
    } else {
        return Err(Error::Credentials(
            "no password, token or application credential is set".to_owned(),
        ));
    };
    let mut session = match session {
        Ok(session) => session,
        Err(e) if matches!(e.kind(), ErrorKind::AuthenticationFailed | ErrorKind::AccessDenied) => {
            return Err(Error::Auth(e));
        }
        Err(e) => {
            if let Some(line) = ccm_tls_explain::diagnose(&probe, &auth_url, TRUST).await {
                return Err(Error::Tls(line));
            }
            return Err(Error::Call { operation: "authenticate", source: e });
        }
    };
    if let Some(region) = &credentials.region {
        session.set_region(region.clone());
    }
    session.set_endpoint_interface(match credentials.interface {
        EndpointInterface::Public => InterfaceType::Public,
        EndpointInterface::Internal => InterfaceType::Internal,
        EndpointInterface::Admin => InterfaceType::Admin,
    });
    Ok(session)
}

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

/// `builder` also trusting the CA bundle `pem` (`what` names it in errors); a bundle without a
/// certificate is an error.
fn trust(
    builder: reqwest::ClientBuilder,
    what: &str,
    pem: &[u8],
) -> Result<reqwest::ClientBuilder> {
    let (builder, count) = ccm_tls_explain::trust_bundle(builder, pem)
        .map_err(|e| Error::Credentials(format!("{what}: {e}")))?;
    if count == 0 {
        return Err(Error::Credentials(format!("{what}: no certificate found")));
    }
    Ok(builder)
}

/// The reqwest client: timeout, private CA (rustls trusts webpki roots only), insecure mode, client cert.
fn http_client(c: &Credentials, timeout: Duration) -> Result<reqwest::Client> {
    // A backstop only: API calls are bounded by `OpenStack::call`'s own timeout, which can
    // report a timeout as such (osauth folds reqwest's timeout into a generic protocol error).
    let mut builder = reqwest::Client::builder()
        .timeout(timeout + Duration::from_secs(5))
        .connect_timeout(timeout.min(Duration::from_secs(10)));
    if let Some(path) = &c.ca_file {
        let pem =
            std::fs::read(path).map_err(|e| Error::Credentials(format!("ca-file {path}: {e}")))?;
        builder = trust(builder, &format!("ca-file {path}"), &pem)?;
    }
    if let Some(pem) = &c.ca_bundle {
        builder = trust(builder, "the Secret's cacert", pem.as_bytes())?;
    }
    if c.tls_insecure {
        tracing::warn!(
            "tls-insecure = true: the certificates of OpenStack's endpoints are not verified"
        );
        builder = builder.danger_accept_invalid_certs(true);
    }
    if let (Some(cert), Some(key)) = (&c.cert_file, &c.key_file) {
        let mut pem = std::fs::read(cert)
            .map_err(|e| Error::Credentials(format!("cert-file {cert}: {e}")))?;
        pem.extend(
            std::fs::read(key).map_err(|e| Error::Credentials(format!("key-file {key}: {e}")))?,
        );
        let identity = reqwest::Identity::from_pem(&pem)
            .map_err(|e| Error::Credentials(format!("cert-file/key-file: {e}")))?;
        builder = builder.identity(identity);
    }
    builder.build().map_err(|e| Error::Credentials(format!("HTTP client: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn password() -> Credentials {
        Credentials {
            auth_url: Some("http://127.0.0.1:9/v3".into()),
            username: Some("u".into()),
            password: Some("p".to_owned().into()),
            ..Credentials::default()
        }
    }

    #[tokio::test]
    async fn unusable_credentials_are_reported_before_any_call() {
        let timeout = Duration::from_secs(1);
        let no_url = Credentials { auth_url: None, ..password() };
        let err = connect(&no_url, timeout).await.unwrap_err();
        assert_eq!(err.to_string(), "OpenStack credentials: auth-url is not set");
        let nothing = Credentials { password: None, ..password() };
        assert!(
            connect(&nothing, timeout)
                .await
                .unwrap_err()
                .to_string()
                .contains("no password, token")
        );
        let trust = Credentials { trust_id: Some("t".into()), ..password() };
        assert!(connect(&trust, timeout).await.unwrap_err().to_string().contains("trust"));
        let by_id = Credentials { username: None, user_id: Some("uid".into()), ..password() };
        assert!(connect(&by_id, timeout).await.unwrap_err().to_string().contains("needs username"));
    }

    #[tokio::test]
    async fn a_bad_ca_file_is_named_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("ca.pem");
        std::fs::write(&garbage, "not a certificate").unwrap();
        for path in [garbage, dir.path().join("missing.pem")] {
            let creds = Credentials { ca_file: Some(path.display().to_string()), ..password() };
            let err = connect(&creds, Duration::from_secs(1)).await.unwrap_err().to_string();
            assert!(err.contains(&path.display().to_string()), "{err}");
        }
    }

    #[tokio::test]
    async fn keystone_unreachable_is_a_call_error_not_an_auth_error() {
        let err = connect(&password(), Duration::from_secs(1)).await.unwrap_err();
        assert_eq!(err.kind().as_str(), "connection");
    }
}
