//! The Keystone session of the generator's lookups: built as osauth's clouds.yaml loader builds
//! it (password, token or application credential; project scope, region, interface, endpoint
//! overrides) but over an HTTP client of our own, because osauth's trusts only the first
//! certificate of `cacert`, ignores `verify: false`, and cannot add the install-config's
//! `additionalTrustBundle`.

use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;

use osauth::common::IdOrName;
use osauth::identity::{ApplicationCredential, Password, Token};
use osauth::{Error, ErrorKind, InterfaceType, Session};

use crate::assets::openstack::Cloud;

/// The HTTP client: the web roots, the `cacert` bundle (every certificate of it) and the
/// `additionalTrustBundle`; `verify: false` turns verification off, with a warning.
pub(super) fn client(cloud: &Cloud, timeout: Duration) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder().timeout(timeout);
    let bundles =
        [("its cacert", &cloud.ca_bundle), ("additionalTrustBundle", &cloud.trust_bundle)];
    for (what, pem) in bundles {
        let Some(pem) = pem else { continue };
        (builder, _) = ccm_tls_explain::trust_bundle(builder, pem.as_bytes())
            .map_err(|e| format!("cloud {:?}: {what} is not a PEM bundle: {e}", cloud.name))?;
    }
    if cloud.entry.verify == Some(false) {
        tracing::warn!(
            "cloud {:?} has verify: false: the cloud's TLS certificates are not verified",
            cloud.name
        );
        builder = builder.danger_accept_invalid_certs(true);
    }
    builder.build().map_err(|e| format!("cloud {:?}: HTTP client: {e}", cloud.name))
}

/// Authenticates with the cloud's clouds.yaml entry over `client`.
pub(super) async fn session(cloud: &Cloud, client: reqwest::Client) -> Result<Session, Error> {
    let auth = &cloud.entry.auth;
    let invalid = |what: &str| Error::new(ErrorKind::InvalidConfig, what.to_owned());
    let url = auth.auth_url.clone().ok_or_else(|| invalid("auth_url is not set"))?;
    let kind =
        cloud.entry.auth_type.clone().unwrap_or_else(|| {
            if auth.token.is_some() { "v3token" } else { "password" }.to_owned()
        });
    let scope = project_scope(cloud);
    let mut session = match kind.as_str() {
        "password" | "v3password" => {
            let user =
                auth.username.clone().ok_or_else(|| invalid("password auth needs username"))?;
            let password =
                auth.password.clone().ok_or_else(|| invalid("password auth needs password"))?;
            let domain = auth.user_domain_name.clone().unwrap_or_else(|| "Default".to_owned());
            let mut identity = Password::new(&url, user, password, domain)?;
            if let Some((project, domain)) = scope {
                identity.set_project_scope(project, domain);
            }
            Session::new_with_client(client, identity).await?
        }
        "v3token" | "token" => {
            let token = auth.token.clone().ok_or_else(|| invalid("token auth needs token"))?;
            let mut identity = Token::new(&url, token)?;
            if let Some((project, domain)) = scope {
                identity.set_project_scope(project, domain);
            }
            Session::new_with_client(client, identity).await?
        }
        "v3applicationcredential" => {
            let secret = (auth.application_credential_secret.clone())
                .ok_or_else(|| invalid("an application credential needs its secret"))?;
            let identity =
                match (&auth.application_credential_id, &auth.application_credential_name) {
                    (Some(id), _) => ApplicationCredential::new(&url, id.clone(), secret)?,
                    (None, Some(name)) => {
                        let user = auth.user_id.clone().ok_or_else(|| {
                            invalid("an application credential by name needs user_id")
                        })?;
                        ApplicationCredential::with_user_id(&url, name.clone(), secret, user)?
                    }
                    (None, None) => {
                        return Err(invalid("an application credential needs an id or a name"));
                    }
                };
            Session::new_with_client(client, identity).await?
        }
        other => return Err(invalid(&format!("auth_type {other} is not supported"))),
    };
    session = session.with_endpoint_overrides(endpoint_overrides(cloud)?);
    session.endpoint_filters_mut().region = cloud.entry.region_name.clone();
    if let Some(interface) = &cloud.entry.interface {
        session.set_endpoint_interface(InterfaceType::from_str(interface)?);
    }
    Ok(session)
}

/// The project and its domain, as osauth reads them.
fn project_scope(cloud: &Cloud) -> Option<(IdOrName, Option<IdOrName>)> {
    let auth = &cloud.entry.auth;
    let project = match (&auth.project_id, &auth.project_name) {
        (Some(id), _) => IdOrName::from_id(id.clone()),
        (None, Some(name)) => IdOrName::from_name(name.clone()),
        (None, None) => return None,
    };
    let domain = (auth.project_domain_id.clone().map(IdOrName::from_id))
        .or_else(|| auth.project_domain_name.clone().map(IdOrName::from_name));
    Some((project, domain))
}

/// `<service>_endpoint_override` keys: the URL to use instead of the catalog's.
fn endpoint_overrides(cloud: &Cloud) -> Result<HashMap<String, reqwest::Url>, Error> {
    let mut overrides = HashMap::new();
    for (key, value) in &cloud.entry.other {
        let Some(service) = key.strip_suffix("_endpoint_override") else { continue };
        let url = value
            .as_str()
            .and_then(|v| reqwest::Url::parse(v).ok())
            .ok_or_else(|| Error::new(ErrorKind::InvalidConfig, format!("{key} is not a URL")))?;
        overrides.insert(service.replace('_', "-"), url.clone());
        overrides.insert(service.to_owned(), url);
    }
    Ok(overrides)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cloud(ca_bundle: Option<&str>, trust_bundle: Option<&str>) -> Cloud {
        Cloud {
            name: "c".into(),
            entry: Default::default(),
            ca_bundle: ca_bundle.map(str::to_owned),
            trust_bundle: trust_bundle.map(str::to_owned),
        }
    }

    #[test]
    fn every_certificate_of_both_bundles_is_read_and_a_broken_one_is_named() {
        let two = [testkit::tls::TestCa::new("a").pem(), testkit::tls::TestCa::new("b").pem()];
        let both = two.concat();
        assert!(client(&cloud(Some(&both), Some(&two[0])), Duration::from_secs(1)).is_ok());
        let broken = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n";
        let err = client(&cloud(None, Some(broken)), Duration::from_secs(1)).unwrap_err();
        assert!(err.starts_with("cloud \"c\": additionalTrustBundle is not a PEM bundle"), "{err}");
    }
}
