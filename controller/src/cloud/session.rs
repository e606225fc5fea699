//! The osauth session: credentials → Keystone login (CA, TLS, region, interface), reconnect
//! with backoff, re-auth on 401, not-found mapping, every call counted.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use osauth::{ErrorKind, Session};
use tokio::sync::Notify;

use super::auth::connect;
use super::limit::{self, Limit};
use super::{
    Cloud, Error, Instance, Lookup, PORTS_PER_REQUEST, Port, Result, Server, ServerState, neutron,
    nova,
};
use crate::config::Credentials;
use crate::metrics::Metrics;

/// First and last wait between connection attempts.
const BACKOFF: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(60));

#[derive(Default)]
struct State {
    credentials: Option<Credentials>,
    generation: u64,
    session: Option<Session>,
    last_error: String,
}

/// The OpenStack [`Cloud`]: one session shared by all controllers, replaced when credentials change.
pub struct OpenStack {
    metrics: Arc<Metrics>,
    /// `[Metadata] request-timeout`: bounds every HTTP call.
    timeout: Mutex<Duration>,
    ready: tokio::sync::watch::Sender<bool>,
    overrides: Mutex<Vec<(&'static str, String)>>,
    state: Mutex<State>,
    changed: Notify,
    flavors: Mutex<HashMap<String, String>>,
    /// Every request's turn ([`limit`]), shared by all controllers.
    limit: Limit,
}

impl std::fmt::Debug for OpenStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenStack").field("ready", &self.ready()).finish_non_exhaustive()
    }
}

impl OpenStack {
    /// A client with no credentials yet; `request_timeout` bounds every HTTP call; the
    /// default request limit.
    pub fn new(metrics: Arc<Metrics>, request_timeout: Duration) -> Arc<Self> {
        OpenStack::with_limit(metrics, request_timeout, limit::Settings::default())
    }

    /// [`OpenStack::new`] with a request limit of its own.
    pub fn with_limit(
        metrics: Arc<Metrics>,
        request_timeout: Duration,
        limit: limit::Settings,
    ) -> Arc<Self> {
        Arc::new(OpenStack {
            metrics,
            timeout: Mutex::new(request_timeout),
            ready: tokio::sync::watch::Sender::new(false),
            overrides: Mutex::new(Vec::new()),
            state: Mutex::new(State {
                last_error: "no credentials yet".to_owned(),
                ..State::default()
            }),
            changed: Notify::new(),
            flavors: Mutex::new(HashMap::new()),
            limit: Limit::new(limit),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Uses new credentials from now on (rotation): the next call re-authenticates.
    pub fn set_credentials(&self, credentials: Credentials) {
        let mut state = self.state();
        state.credentials = Some(credentials);
        self.log_in_again(state, "re-authenticating with new credentials");
    }

    /// The bound of every HTTP call.
    fn timeout(&self) -> Duration {
        *self.timeout.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new `[Metadata] request-timeout`: calls take it at once, and the session logs in
    /// again (its HTTP client was built with the old one). No change, no new login.
    pub fn set_request_timeout(&self, timeout: Duration) {
        {
            let mut now = self.timeout.lock().unwrap_or_else(PoisonError::into_inner);
            if *now == timeout {
                return;
            }
            *now = timeout;
        }
        let state = self.state();
        if state.credentials.is_some() {
            self.log_in_again(state, "logging in again with the new request timeout");
        }
    }

    /// Drops the session (not ready until the next login, which `keep_connected` makes now).
    fn log_in_again(&self, mut state: MutexGuard<'_, State>, why: &str) {
        state.generation += 1;
        state.session = None;
        why.clone_into(&mut state.last_error);
        drop(state);
        self.set_ready(false);
        self.changed.notify_one();
    }

    /// True while a session is established (drives `/readyz`).
    pub fn ready(&self) -> bool {
        self.state().session.is_some()
    }

    /// Ready, or the last reason it is not (for /readyz).
    pub fn readiness(&self) -> std::result::Result<(), String> {
        let state = self.state();
        if state.session.is_some() { Ok(()) } else { Err(state.last_error.clone()) }
    }

    /// Readiness changes, for waiting without polling.
    pub fn subscribe_ready(&self) -> tokio::sync::watch::Receiver<bool> {
        self.ready.subscribe()
    }

    /// Sends `compute` or `network` calls to `url` instead of the catalog's endpoint (as
    /// clouds.yaml `<service>_endpoint_override`); applies from the next login.
    pub fn set_endpoint_override(&self, service: &'static str, url: &str) {
        self.overrides
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((service, url.to_owned()));
    }

    fn set_ready(&self, up: bool) {
        self.metrics.set_connected(up);
        self.ready.send_replace(up);
    }

    /// Keeps a session established: connects with exponential backoff whenever there is none.
    /// Never returns.
    pub async fn keep_connected(self: Arc<Self>) {
        let mut wait = BACKOFF.0;
        loop {
            let todo = {
                let state = self.state();
                match (&state.session, &state.credentials) {
                    (None, Some(c)) => Some((c.clone(), state.generation)),
                    _ => None,
                }
            };
            let Some((credentials, generation)) = todo else {
                self.changed.notified().await;
                continue;
            };
            let started = Instant::now();
            let overrides = self.overrides.lock().unwrap_or_else(PoisonError::into_inner).clone();
            let result = connect(&credentials, self.timeout()).await.and_then(|mut session| {
                for (service, url) in overrides {
                    let url: reqwest::Url = url
                        .parse()
                        .map_err(|e| Error::Credentials(format!("endpoint override {url}: {e}")))?;
                    match service {
                        "compute" => session.set_endpoint_override(osauth::services::COMPUTE, url),
                        _ => session.set_endpoint_override(osauth::services::NETWORK, url),
                    }
                }
                Ok(session)
            });
            let label = result.as_ref().err().map_or("ok", |e| e.kind().as_str());
            self.metrics.call("identity", "authenticate", label, started.elapsed());
            let failed = {
                let mut state = self.state();
                if state.generation != generation {
                    continue;
                }
                match result {
                    Ok(session) => {
                        state.session = Some(session);
                        state.last_error.clear();
                        None
                    }
                    Err(error) => {
                        state.last_error = chain(&error);
                        Some(state.last_error.clone())
                    }
                }
            };
            match failed {
                None => {
                    self.set_ready(true);
                    tracing::info!("authenticated to OpenStack");
                    wait = BACKOFF.0;
                }
                Some(error) => {
                    tracing::warn!(%error, retry_in = ?wait, "cannot authenticate to OpenStack");
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = self.changed.notified() => {}
                    }
                    wait = (wait * 2).min(BACKOFF.1);
                }
            }
        }
    }

    fn session(&self) -> Result<Session> {
        let state = self.state();
        state
            .session
            .clone()
            .ok_or_else(|| Error::NotConnected { reason: state.last_error.clone() })
    }

    /// Runs one call: re-auth once on 401, map errors, count the result.
    pub(super) async fn call<T, F, Fut>(
        &self,
        service: &'static str,
        operation: &'static str,
        what: &str,
        f: F,
    ) -> Result<T>
    where
        F: Fn(Session) -> Fut,
        Fut: Future<Output = std::result::Result<T, osauth::Error>>,
    {
        let session = self.session()?;
        let started = Instant::now();
        let bounded = |session: Session| {
            let call = f(session);
            let timeout = self.timeout();
            async move {
                tokio::time::timeout(timeout, call).await.unwrap_or_else(|_| {
                    let message = format!("no answer within {}", crate::duration::format(timeout));
                    Err(osauth::Error::new(ErrorKind::OperationTimedOut, message))
                })
            }
        };
        let attempt = async |session: Session| {
            let mut result = bounded(session.clone()).await;
            if matches!(&result, Err(e) if e.kind() == ErrorKind::AuthenticationFailed) {
                let mut fresh = session;
                match fresh.refresh().await {
                    Ok(()) => result = bounded(fresh).await,
                    Err(e) => result = Err(e),
                }
            }
            result
        };
        // Each attempt waits for the shared limit; a throttled one is sent again later.
        let mut backoff = limit::Backoff::default();
        let result = loop {
            let (result, throttled) = {
                let _turn = self.limit.acquire().await;
                // Boxed: the call's future is large, and a debug build's worker stack is not.
                limit::observe(Box::pin(attempt(session.clone()))).await
            };
            let (Err(_), Some(throttled)) = (&result, throttled) else { break result };
            let Some(wait) = backoff.next_wait() else { break result };
            let wait = throttled.retry_after.unwrap_or(wait);
            self.metrics.call(service, operation, "throttled", started.elapsed());
            tracing::debug!(
                service,
                operation,
                status = throttled.status,
                ?wait,
                "throttled; sending it again"
            );
            tokio::time::sleep(wait).await;
        };
        let result = result.map_err(|source| match source.kind() {
            ErrorKind::ResourceNotFound => Error::NotFound { what: what.to_owned() },
            ErrorKind::AuthenticationFailed => Error::Auth(source),
            _ => Error::Call { operation, source },
        });
        let label = result.as_ref().err().map_or("ok", |e| e.kind().as_str());
        self.metrics.call(service, operation, label, started.elapsed());
        if let Err(error @ Error::Auth(_)) = &result {
            let mut state = self.state();
            state.session = None;
            state.last_error = chain(error);
            drop(state);
            self.set_ready(false);
            self.changed.notify_one();
        }
        result
    }

    async fn flavor(
        &self,
        server: &Server,
        cache: &mut HashMap<String, String>,
    ) -> Result<Option<String>> {
        if let Some(name) = &server.flavor.original_name {
            return Ok(Some(name.clone()));
        }
        let Some(id) = &server.flavor.id else { return Ok(None) };
        if let Some(name) = cache.get(id) {
            return Ok(Some(name.clone()));
        }
        let name = self
            .call("compute", "flavor_get", &format!("flavor {id}"), |s| {
                let id = id.clone();
                async move { nova::flavor_name(&s, &id).await }
            })
            .await?;
        cache.insert(id.clone(), name.clone());
        Ok(Some(name))
    }

    /// Every page of `servers/detail` with these filters, each page one counted request.
    async fn list_pages<T>(&self, filters: &[(&'static str, String)]) -> Result<Vec<T>>
    where
        T: nova::Listed + serde::de::DeserializeOwned + Send,
    {
        let mut all: Vec<T> = Vec::new();
        loop {
            let marker = all.last().map(|s| s.id().to_owned());
            let page: Vec<T> = self
                .call("compute", "server_list", "servers", |s| {
                    let marker = marker.clone();
                    async move { nova::servers_page(&s, filters, marker.as_deref()).await }
                })
                .await?;
            let full = page.len() >= nova::PAGE;
            all.extend(page);
            if !full {
                return Ok(all);
            }
        }
    }

    fn flavor_cache(&self) -> HashMap<String, String> {
        self.flavors.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Cloud for OpenStack {
    async fn server(&self, lookup: &Lookup) -> Result<Server> {
        match lookup {
            Lookup::Id(id) => {
                self.call("compute", "server_get", &format!("server id {id}"), |s| {
                    let id = id.clone();
                    async move { nova::get_server(&s, &id).await }
                })
                .await
            }
            Lookup::Name(name) => {
                let mut found = self
                    .call("compute", "server_list", &format!("server named {name:?}"), |s| {
                        let name = name.clone();
                        async move { nova::find_servers_by_name(&s, &name).await }
                    })
                    .await?;
                match found.len() {
                    1 => Ok(found.remove(0)),
                    0 => Err(Error::NotFound { what: format!("server named {name:?}") }),
                    count => Err(Error::Ambiguous { name: name.clone(), count }),
                }
            }
        }
    }

    async fn instance(&self, lookup: &Lookup) -> Result<Instance> {
        let server = self.server(lookup).await?;
        let ports = self
            .call("network", "port_list", &format!("ports of server {}", server.id), |s| {
                let id = server.id.clone();
                async move { neutron::list_ports(&s, &[&id]).await }
            })
            .await?;
        let mut cache = self.flavor_cache();
        let flavor_name = self.flavor(&server, &mut cache).await?;
        self.flavors.lock().unwrap_or_else(PoisonError::into_inner).extend(cache);
        Ok(Instance { server, ports, flavor_name })
    }

    async fn servers(&self, since: Option<&str>) -> Result<Vec<Server>> {
        let filters: Vec<_> = since.map(|t| ("changes-since", t.to_owned())).into_iter().collect();
        let servers: Vec<Server> = self.list_pages(&filters).await?;
        if since.is_none() {
            // Refreshed, not grown: only the flavors of live servers stay.
            let live: std::collections::HashSet<&str> =
                servers.iter().filter_map(|s| s.flavor.id.as_deref()).collect();
            let mut flavors = self.flavors.lock().unwrap_or_else(PoisonError::into_inner);
            flavors.retain(|id, _| live.contains(id.as_str()));
        }
        Ok(servers)
    }

    async fn server_states(&self) -> Result<Vec<ServerState>> {
        self.list_pages(&[]).await
    }

    async fn ports(&self, devices: Option<&[String]>) -> Result<Vec<Port>> {
        let Some(devices) = devices else {
            return self
                .call("network", "port_list", "ports", |s| async move {
                    neutron::list_ports(&s, &[]).await
                })
                .await;
        };
        let mut all = Vec::new();
        for chunk in devices.chunks(PORTS_PER_REQUEST) {
            let ports = self
                .call("network", "port_list", "ports of servers", |s| async move {
                    let ids: Vec<&str> = chunk.iter().map(String::as_str).collect();
                    neutron::list_ports(&s, &ids).await
                })
                .await?;
            all.extend(ports);
        }
        Ok(all)
    }

    fn region(&self) -> Option<String> {
        self.state().credentials.as_ref().and_then(|c| c.region.clone())
    }
}

/// An error and its causes on one line, each said once (one function for both binaries).
pub use ccm_tls_explain::chain;

#[cfg(test)]
mod tests {
    use super::*;

    /// See: issue 36 (`cannot build the Kubernetes client: rustls tls error: invalid private
    /// key: invalid peer certificate: …`, the same text three times).
    #[test]
    fn causes_that_their_error_already_prints_are_said_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("cannot build the Kubernetes client")]
        struct Ours(#[source] ::kube::Error);
        let rustls = rustls::Error::General("bad".into());
        let tls = ::kube::client::RustlsTlsError::InvalidPrivateKey(rustls);
        let error = Ours(::kube::Error::RustlsTls(tls));
        assert_eq!(
            chain(&error),
            "cannot build the Kubernetes client: rustls tls error: invalid private key: \
             unexpected error: bad"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn calls_before_login_fail_fast_as_not_connected_and_keystone_down_is_retried() {
        let metrics = Metrics::shared();
        let cloud = OpenStack::new(metrics.clone(), Duration::from_secs(5));
        let err = cloud.server(&Lookup::Id("x".into())).await.unwrap_err();
        assert_eq!(err.to_string(), "not connected to OpenStack: no credentials yet");
        assert_eq!(err.kind().as_str(), "not_connected");
        // Nothing listens on port 9: every attempt fails, and the loop keeps trying with backoff.
        cloud.set_credentials(Credentials {
            auth_url: Some("http://127.0.0.1:9/v3".into()),
            username: Some("u".into()),
            password: Some("p".to_owned().into()),
            ..Credentials::default()
        });
        tokio::spawn(cloud.clone().keep_connected());
        // Virtual time (paused clock): backoff 1 s + 2 s + 4 s … reaches three attempts quickly.
        let attempts = async {
            while metrics.calls("identity", "authenticate", "connection") < 3 {
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(1000), attempts)
            .await
            .expect("three login attempts within 1000 s");
        assert!(!cloud.ready());
        let err = cloud.servers(None).await.unwrap_err();
        assert!(err.to_string().contains("error sending request"), "{err}");
    }
}
