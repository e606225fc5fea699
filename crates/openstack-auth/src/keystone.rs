//! Our Keystone v3 login and its token cache, as osauth's [`AuthType`]. osauth's own logins
//! renew a token only once fewer than 10 minutes are left (a shorter token: one login per
//! request); here a token is renewed by [`crate::renewal`]'s rule, or when a call was refused
//! (a 401: [`AuthType::refresh`]), once for all the calls refused together. Endpoints come from
//! the token's catalog, chosen as osauth chooses them. See: issue 36.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use osauth::common::IdOrName;
use osauth::{AuthType, EndpointFilters, Error, ErrorKind};
use reqwest::header::HeaderValue;
use reqwest::{Client, RequestBuilder, Url};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::RwLock;

use crate::renewal::{self, Validity};

/// Who logs in; the secrets stay secrets until the request body is written.
pub(crate) enum Identity {
    /// A user by name, in a domain by name.
    Password { user: String, domain: String, password: SecretString },
    /// A token already issued.
    Token(SecretString),
    /// An application credential by ID, or by name with its user's ID.
    ApplicationCredential { credential: IdOrName, user_id: Option<String>, secret: SecretString },
}

/// How soon a renewal that Keystone did not answer is tried again, while the token lives.
const RETRY: Duration = Duration::from_secs(10);

/// A project, and its domain.
pub(crate) type Scope = (IdOrName, Option<IdOrName>);

/// One Keystone identity and the token it holds.
pub(crate) struct Keystone {
    token_url: Url,
    identity: Identity,
    scope: Option<Scope>,
    cache: RwLock<Option<Cached>>,
    /// Logins so far: a refusal that finds a login made since it was told logs in no more.
    logins: AtomicU64,
}

/// The token in use.
struct Cached {
    /// `X-Subject-Token`, marked sensitive (never shown by `Debug`).
    value: HeaderValue,
    catalog: Vec<Service>,
    expires_at: Timestamp,
    renew_at: Instant,
    /// When it expires, by our monotonic clock.
    valid_until: Instant,
}

impl fmt::Debug for Keystone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let method = match self.identity {
            Identity::Password { .. } => "password",
            Identity::Token(_) => "token",
            Identity::ApplicationCredential { .. } => "application_credential",
        };
        f.debug_struct("Keystone")
            .field("token_url", &self.token_url.as_str())
            .field("method", &method)
            .finish_non_exhaustive()
    }
}

impl Keystone {
    /// A login to the Keystone at `auth_url` (with or without its `/v3`); no request yet.
    pub(crate) fn new(
        auth_url: &str,
        identity: Identity,
        scope: Option<Scope>,
    ) -> Result<Keystone, String> {
        let mut url =
            Url::parse(auth_url).map_err(|e| format!("{auth_url:?} is not a URL: {e}"))?;
        if url.cannot_be_a_base() {
            return Err(format!("{auth_url:?} is not an http(s) URL"));
        }
        let path = url.path().trim_end_matches('/').to_owned();
        let version = if path.ends_with("/v3") { "" } else { "/v3" };
        url.set_path(&format!("{path}{version}/auth/tokens"));
        let cache = RwLock::new(None);
        Ok(Keystone { token_url: url, identity, scope, cache, logins: AtomicU64::new(0) })
    }

    /// The body of `POST /v3/auth/tokens`.
    fn body(&self) -> Value {
        let identity = match &self.identity {
            Identity::Password { user, domain, password } => json!({
                "methods": ["password"],
                "password": {"user": {
                    "name": user, "domain": {"name": domain}, "password": password.expose_secret()
                }},
            }),
            Identity::Token(token) => {
                json!({"methods": ["token"], "token": {"id": token.expose_secret()}})
            }
            Identity::ApplicationCredential { credential, user_id, secret } => {
                let mut body = id_or_name(credential);
                body["secret"] = secret.expose_secret().into();
                if let Some(id) = user_id {
                    body["user"] = json!({"id": id});
                }
                json!({"methods": ["application_credential"], "application_credential": body})
            }
        };
        let mut auth = json!({"identity": identity});
        if let Some((project, domain)) = &self.scope {
            let mut project = id_or_name(project);
            if let Some(domain) = domain {
                project["domain"] = id_or_name(domain);
            }
            auth["scope"] = json!({"project": project});
        }
        json!({"auth": auth})
    }

    /// Runs `f` on a token not yet due for renewal, logging in first when there is none. A
    /// renewal that fails but for a refusal (Keystone down, a timeout) keeps the token while it
    /// lives and is tried again [`RETRY`] later: renewing at half the lifetime leaves that time.
    async fn with_token<T>(
        &self,
        client: &Client,
        f: impl FnOnce(&Cached) -> T,
    ) -> Result<T, Error> {
        let fresh = |c: &&Cached| Instant::now() < c.renew_at;
        if let Some(cached) = self.cache.read().await.as_ref().filter(fresh) {
            return Ok(f(cached));
        }
        let mut cache = self.cache.write().await;
        // Another call may have logged in while this one waited.
        if cache.as_ref().filter(fresh).is_none()
            && let Err(error) = self.login(client, &mut cache).await
        {
            let refused =
                matches!(error.kind(), ErrorKind::AuthenticationFailed | ErrorKind::AccessDenied);
            match cache.as_mut().filter(|c| !refused && Instant::now() < c.valid_until) {
                Some(cached) => {
                    cached.renew_at = Instant::now() + RETRY;
                    tracing::warn!(
                        %error, retry_in = ?RETRY,
                        "cannot renew the Keystone token; the current one is used while it lives"
                    );
                }
                None => return Err(error),
            }
        }
        Ok(f(cache.as_ref().expect("a login leaves a token")))
    }

    /// Asks Keystone for a token and keeps it in `cache`.
    async fn login(&self, client: &Client, cache: &mut Option<Cached>) -> Result<(), Error> {
        let response = client.post(self.token_url.clone()).json(&self.body()).send().await?;
        let response = osauth::client::check(response).await?;
        let received = (Instant::now(), Timestamp::now());
        let mut value = response.headers().get("x-subject-token").cloned().ok_or_else(|| {
            Error::new(ErrorKind::InvalidResponse, "Keystone sent no X-Subject-Token header")
        })?;
        value.set_sensitive(true);
        let token = response.json::<Root>().await?.token;
        let validity = token.validity()?;
        let previous = cache.as_ref().map(|c| c.expires_at);
        let renew_at = renewal::renew_at(validity, received.0, received.1, previous);
        let valid_until = received.0 + renewal::lifetime(validity, received.1);
        tracing::debug!(
            expires_at = %validity.expires_at,
            renew_in = ?renew_at.saturating_duration_since(received.0),
            "Keystone token issued"
        );
        *cache = Some(Cached {
            value,
            catalog: token.catalog,
            expires_at: validity.expires_at,
            renew_at,
            valid_until,
        });
        self.logins.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[async_trait::async_trait]
impl AuthType for Keystone {
    async fn authenticate(
        &self,
        client: &Client,
        request: RequestBuilder,
    ) -> Result<RequestBuilder, Error> {
        let value = self.with_token(client, |c| c.value.clone()).await?;
        Ok(request.header("x-auth-token", value))
    }

    async fn get_endpoint(
        &self,
        client: &Client,
        service_type: &str,
        filters: &EndpointFilters,
    ) -> Result<Url, Error> {
        self.with_token(client, |c| endpoint(&c.catalog, service_type, filters)).await?
    }

    /// A new token now (a call was refused), unless a login under way when this was asked
    /// brought one: calls refused together log in once.
    async fn refresh(&self, client: &Client) -> Result<(), Error> {
        let seen = self.logins.load(Ordering::SeqCst);
        let mut cache = self.cache.write().await;
        if self.logins.load(Ordering::SeqCst) != seen {
            return Ok(());
        }
        self.login(client, &mut cache).await
    }
}

fn id_or_name(value: &IdOrName) -> Value {
    match value {
        IdOrName::Id(id) => json!({"id": id}),
        IdOrName::Name(name) => json!({"name": name}),
    }
}

/// The body of Keystone's answer.
#[derive(Deserialize)]
struct Root {
    token: Token,
}

#[derive(Deserialize)]
struct Token {
    issued_at: Option<String>,
    expires_at: String,
    #[serde(default)]
    catalog: Vec<Service>,
}

impl Token {
    fn validity(&self) -> Result<Validity, Error> {
        let time = |text: &str| {
            text.parse::<Timestamp>().map_err(|e| {
                Error::new(ErrorKind::InvalidResponse, format!("token time {text:?}: {e}"))
            })
        };
        Ok(Validity {
            issued_at: self.issued_at.as_deref().map(time).transpose()?,
            expires_at: time(&self.expires_at)?,
        })
    }
}

/// A service of the catalog.
#[derive(Debug, Deserialize)]
struct Service {
    #[serde(rename = "type")]
    service_type: String,
    endpoints: Vec<Endpoint>,
}

#[derive(Debug, Deserialize)]
struct Endpoint {
    interface: String,
    #[serde(default)]
    region: Option<String>,
    url: String,
}

/// The URL of `service_type` in `catalog`: an endpoint of the filters' region (when set) on
/// the first of their interfaces that has one (osauth's choice).
fn endpoint(
    catalog: &[Service],
    service_type: &str,
    filters: &EndpointFilters,
) -> Result<Url, Error> {
    let not_found = || {
        Error::new(
            ErrorKind::EndpointNotFound,
            format!("Endpoint for service {service_type} was not found"),
        )
    };
    let service = catalog.iter().find(|s| s.service_type == service_type).ok_or_else(not_found)?;
    let region =
        |e: &Endpoint| filters.region.as_ref().is_none_or(|r| e.region.as_ref() == Some(r));
    let chosen = (service.endpoints.iter())
        .filter(|e| region(e))
        .filter_map(|e| Some((filters.interfaces.iter().position(|i| *i == e.interface)?, e)))
        .min_by_key(|(rank, _)| *rank)
        .ok_or_else(not_found)?
        .1;
    Url::parse(&chosen.url).map_err(|e| {
        let message = format!("Invalid URL {} for {service_type} - {e}", chosen.url);
        Error::new(ErrorKind::InvalidResponse, message)
    })
}

#[cfg(test)]
mod tests;
