//! Who may read what the server serves: the API server authenticates a request's bearer token
//! (TokenReview) and authorizes it (SubjectAccessReview), as upstream's controller managers
//! delegate; the paths of `--authorization-always-allow-paths` are served to anyone.
//!
//! A request without a token, or whose token the API server does not know, is answered 401; one
//! the API server does not allow, 403; one the API server could not judge (unreachable, slow,
//! refusing this controller's reviews), 503: never served. Both answers are cached for
//! upstream's defaults (`--authentication-token-webhook-cache-ttl`,
//! `--authorization-webhook-cache-{authorized,unauthorized}-ttl`: 10 s each), so a scrape every
//! 15 s costs two reviews a minute at most; failures are not cached.

mod expiring;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use k8s_openapi::ClusterResourceScope;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use sha2::{Digest, Sha256};

use self::expiring::Expiring;
use crate::kube as k8s;

/// How long the API server's answer about a token is kept, either way (upstream's
/// `--authentication-token-webhook-cache-ttl`).
pub(crate) const TOKEN_TTL: Duration = Duration::from_secs(10);
/// How long an allowed request is remembered (`--authorization-webhook-cache-authorized-ttl`).
pub(crate) const ALLOWED_TTL: Duration = Duration::from_secs(10);
/// How long a refused one is (`--authorization-webhook-cache-unauthorized-ttl`).
pub(crate) const DENIED_TTL: Duration = Duration::from_secs(10);
/// The longest wait for one review (upstream's webhook client timeout).
const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);
/// Answers kept at most, per cache: memory stays bounded whatever tokens clients send.
const CAPACITY: usize = 1024;
/// Authorized without a SubjectAccessReview, as upstream's `AlwaysAllowGroups` default: the
/// API server's own authorizer lets this group do anything.
const PRIVILEGED_GROUP: &str = "system:masters";
/// The review client's own rate limit (upstream's: 200 qps, burst 400), apart from the
/// controllers' `--kube-api-qps`.
const REVIEW_QPS: (f32, u32) = (200.0, 400);

/// A review that failed: no answer from the API server.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The review client could not be built from its kubeconfig.
    #[error("cannot build the client of the API server that reviews requests to the server")]
    Client(#[source] k8s::Error),
    /// The API server refused this controller the review itself (RBAC).
    #[error(
        "the API server refused this controller's {review} (bind its identity to the ClusterRole \
         system:auth-delegator): {message}"
    )]
    Refused {
        /// `TokenReview` or `SubjectAccessReview`.
        review: &'static str,
        /// The API server's words.
        message: String,
    },
    /// The API server answered the review with another error (5xx, 404 where no such API is).
    #[error("the API server answered the {review} with {code}: {message}")]
    Answered {
        /// `TokenReview` or `SubjectAccessReview`.
        review: &'static str,
        /// The HTTP status.
        code: u16,
        /// The API server's words.
        message: String,
    },
    /// The review failed otherwise (connection, an answer that is not a review).
    #[error("the API server's {review} failed")]
    Review {
        /// `TokenReview` or `SubjectAccessReview`.
        review: &'static str,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// No answer within [`REVIEW_TIMEOUT`].
    #[error("the API server did not answer the {review} within {REVIEW_TIMEOUT:?}")]
    Timeout {
        /// `TokenReview` or `SubjectAccessReview`.
        review: &'static str,
    },
}

/// The paths served without a token: exact, or any path starting with what precedes a final
/// `*` (upstream's path authorizer).
#[derive(Debug, Clone, Default)]
pub(crate) struct OpenPaths(Vec<String>);

impl OpenPaths {
    /// From `--authorization-always-allow-paths` (empty items dropped).
    pub(crate) fn new(paths: impl IntoIterator<Item = String>) -> OpenPaths {
        OpenPaths(paths.into_iter().filter(|p| !p.is_empty()).collect())
    }

    fn contains(&self, path: &str) -> bool {
        self.0.iter().any(|open| match open.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => path == open,
        })
    }
}

/// Who the API server says a token's holder is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct User {
    name: String,
    uid: String,
    groups: Vec<String>,
    extra: BTreeMap<String, Vec<String>>,
}

impl From<UserInfo> for User {
    fn from(info: UserInfo) -> User {
        User {
            name: info.username.unwrap_or_default(),
            uid: info.uid.unwrap_or_default(),
            groups: info.groups.unwrap_or_default(),
            extra: info.extra.unwrap_or_default(),
        }
    }
}

/// What becomes of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Served.
    Allowed,
    /// 401: no token, or one the API server does not authenticate.
    Unauthenticated,
    /// 403, with the words of the answer.
    Forbidden(String),
    /// 503: the API server could not say, with why.
    Unavailable(String),
}

/// The reviews' clients and their caches.
pub(crate) struct Delegation {
    open: OpenPaths,
    authentication: kube::Client,
    authorization: kube::Client,
    /// By the token's SHA-256 (the tokens themselves are not kept): its user, or `None`.
    tokens: Expiring<[u8; 32], Option<User>>,
    /// By user, verb and path: allowed, or the reason it is not.
    decisions: Expiring<(User, String, String), Result<(), String>>,
}

impl Debug for Delegation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegation").field("open", &self.open).finish_non_exhaustive()
    }
}

impl Delegation {
    /// Reviews with these clients, serving `open` to anyone.
    pub(crate) fn new(
        open: OpenPaths,
        authentication: kube::Client,
        authorization: kube::Client,
    ) -> Delegation {
        Delegation {
            open,
            authentication,
            authorization,
            tokens: Expiring::new(CAPACITY),
            decisions: Expiring::new(CAPACITY),
        }
    }

    /// The clients of `--authentication-kubeconfig` and `--authorization-kubeconfig`, each
    /// defaulting to `kubeconfig` (`--kubeconfig`), else to the in-cluster config; one client
    /// when both name the same. Their refusals are not the controllers' (`/readyz` does not
    /// follow them): a review refused is said on the request it failed.
    pub(crate) async fn connect(
        open: OpenPaths,
        authentication: Option<&Path>,
        authorization: Option<&Path>,
        kubeconfig: Option<&Path>,
    ) -> Result<Delegation, Error> {
        let build = async |path: Option<&Path>| {
            let limit = k8s::RateLimit::from_flags(REVIEW_QPS.0, REVIEW_QPS.1);
            k8s::client(path, limit, k8s::Refused::shared()).await.map_err(Error::Client)
        };
        let (authentication, authorization) =
            (authentication.or(kubeconfig), authorization.or(kubeconfig));
        let authn = build(authentication).await?;
        let authz = if authorization == authentication {
            authn.clone()
        } else {
            build(authorization).await?
        };
        Ok(Delegation::new(open, authn, authz))
    }

    /// Whether the request of `method` for `path` with `headers` is served.
    pub(crate) async fn verdict(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
    ) -> Verdict {
        if self.open.contains(path) {
            return Verdict::Allowed;
        }
        let Some(token) = bearer(headers) else {
            return Verdict::Unauthenticated;
        };
        let user = match self.authenticate(token).await {
            Ok(Some(user)) => user,
            Ok(None) => return Verdict::Unauthenticated,
            Err(error) => return unavailable(&error, path),
        };
        if user.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
            return Verdict::Allowed;
        }
        let verb = verb(method);
        match self.authorize(&user, &verb, path).await {
            Ok(Ok(())) => Verdict::Allowed,
            Ok(Err(reason)) => {
                let mut why =
                    format!("forbidden: User {:?} cannot {verb} path {path:?}", user.name);
                if !reason.is_empty() {
                    why = format!("{why}: {reason}");
                }
                tracing::debug!(user = %user.name, path, %reason, "request forbidden");
                Verdict::Forbidden(why)
            }
            Err(error) => unavailable(&error, path),
        }
    }

    /// The token's user (`None`: not authenticated), from the cache or a TokenReview.
    async fn authenticate(&self, token: &str) -> Result<Option<User>, Error> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(known) = self.tokens.get(&key) {
            return Ok(known);
        }
        let spec = TokenReviewSpec { token: Some(token.to_owned()), audiences: None };
        let review = TokenReview { spec, ..TokenReview::default() };
        let answer = create(&self.authentication, "TokenReview", &review).await?.status;
        let user = answer
            .filter(|status| status.authenticated == Some(true))
            .and_then(|status| status.user)
            .map(User::from);
        self.tokens.insert(key, user.clone(), TOKEN_TTL);
        Ok(user)
    }

    /// Whether `user` may `verb` `path` (else the API server's reason), from the cache or a
    /// SubjectAccessReview. Allowed only when the answer says allowed and not denied.
    async fn authorize(
        &self,
        user: &User,
        verb: &str,
        path: &str,
    ) -> Result<Result<(), String>, Error> {
        let key = (user.clone(), verb.to_owned(), path.to_owned());
        if let Some(known) = self.decisions.get(&key) {
            return Ok(known);
        }
        let present = |s: &String| !s.is_empty();
        let spec = SubjectAccessReviewSpec {
            user: Some(user.name.clone()),
            uid: Some(user.uid.clone()).filter(present),
            groups: Some(user.groups.clone()),
            extra: Some(user.extra.clone()).filter(|e| !e.is_empty()),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(path.to_owned()),
                verb: Some(verb.to_owned()),
            }),
            resource_attributes: None,
        };
        let review = SubjectAccessReview { spec, ..SubjectAccessReview::default() };
        let status = create(&self.authorization, "SubjectAccessReview", &review).await?.status;
        let status = status.unwrap_or_default();
        let decision = if status.allowed && status.denied != Some(true) {
            Ok(())
        } else {
            Err(status.reason.unwrap_or_default())
        };
        let ttl = if decision.is_ok() { ALLOWED_TTL } else { DENIED_TTL };
        self.decisions.insert(key, decision.clone(), ttl);
        Ok(decision)
    }
}

/// The router's layer: serves the request when the [`Delegation`] allows it, else answers
/// 401, 403 or 503 with one line.
pub(crate) async fn guard(
    State(delegation): State<Arc<Delegation>>,
    request: Request,
    next: Next,
) -> Response {
    let verdict =
        delegation.verdict(request.method(), request.uri().path(), request.headers()).await;
    match verdict {
        Verdict::Allowed => next.run(request).await,
        Verdict::Unauthenticated => (StatusCode::UNAUTHORIZED, "Unauthorized").into_response(),
        Verdict::Forbidden(why) => (StatusCode::FORBIDDEN, why).into_response(),
        Verdict::Unavailable(why) => (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
    }
}

/// A review's answer, created in the API server (a review is a create of a cluster-scoped
/// object that is never stored).
async fn create<K>(client: &kube::Client, review: &'static str, object: &K) -> Result<K, Error>
where
    K: kube::Resource<DynamicType = (), Scope = ClusterResourceScope>
        + Clone
        + Debug
        + serde::Serialize
        + serde::de::DeserializeOwned,
{
    let api: Api<K> = Api::all(client.clone());
    let params = PostParams::default();
    match tokio::time::timeout(REVIEW_TIMEOUT, api.create(&params, object)).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(kube::Error::Api(status))) if status.code == 403 => {
            Err(Error::Refused { review, message: status.message })
        }
        Ok(Err(kube::Error::Api(status))) => {
            Err(Error::Answered { review, code: status.code, message: status.message })
        }
        Ok(Err(source)) => Err(Error::Review { review, source }),
        Err(_) => Err(Error::Timeout { review }),
    }
}

/// 503 naming why; logged, since whoever scrapes may not show the body.
fn unavailable(error: &Error, path: &str) -> Verdict {
    let why = crate::cloud::session::chain(error);
    tracing::warn!(path, error = %why, "cannot authorize a request to the server");
    Verdict::Unavailable(format!("cannot authorize the request: {why}"))
}

/// The token of `Authorization: Bearer <token>` (the scheme in any case, as upstream).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A request's verb for a non-resource URL, as the API server names it (`get` for GET and
/// HEAD; another method lowercased).
fn verb(method: &Method) -> String {
    let verb = match *method {
        Method::GET | Method::HEAD => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        ref other => return other.as_str().to_ascii_lowercase(),
    };
    verb.to_owned()
}

#[cfg(test)]
pub(crate) mod tests;
