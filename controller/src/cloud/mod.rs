//! The `Cloud` trait: the only OpenStack surface the controllers see, and its error type.

pub mod auth;
pub(crate) mod floating_ips;
pub(crate) mod inventory;
pub mod limit;
pub(crate) mod load_balancing;
pub mod neutron;
pub mod nova;
pub(crate) mod octavia;
pub mod revision;
pub mod routes;
pub(crate) mod security_groups;
pub mod session;

use std::future::Future;

pub use neutron::Port;
pub use nova::{Server, ServerState};
pub use session::OpenStack;

/// An error talking to OpenStack. Only [`Error::NotFound`] may lead to deleting a Node.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The object does not exist (404 by ID, or no server with that exact name).
    #[error("{what} not found")]
    NotFound {
        /// `server id 1234…`, `server named "worker-0"`, `load balancer 5678…`.
        what: String,
    },
    /// More than one server has the node's name.
    #[error("{count} servers are named {name:?}; expected one")]
    Ambiguous {
        /// The name.
        name: String,
        /// How many matched.
        count: usize,
    },
    /// No session yet: credentials missing or Keystone not reached so far.
    #[error("not connected to OpenStack: {reason}")]
    NotConnected {
        /// The last connection failure, already phrased.
        reason: String,
    },
    /// The configured credentials cannot be used as given.
    #[error("OpenStack credentials: {0}")]
    Credentials(String),
    /// The TLS handshake failed: the line names the host, the reason and the fix.
    #[error("{0}")]
    Tls(String),
    /// Keystone rejected the credentials.
    #[error("OpenStack authentication failed")]
    Auth(#[source] osauth::Error),
    /// A call failed (5xx, timeout, connection refused, bad response).
    #[error("OpenStack {operation} failed")]
    Call {
        /// The operation, as in the metrics.
        operation: &'static str,
        /// Why.
        #[source]
        source: osauth::Error,
    },
}

/// What kind of failure an [`Error`] is; [`ErrorKind::as_str`] is its metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// [`Error::NotFound`].
    NotFound,
    /// [`Error::Ambiguous`].
    Ambiguous,
    /// [`Error::NotConnected`].
    NotConnected,
    /// [`Error::Credentials`].
    Credentials,
    /// [`Error::Auth`].
    Auth,
    /// [`Error::Tls`].
    Tls,
    /// A call that got no answer in time.
    Timeout,
    /// A call answered with a 5xx.
    ServerError,
    /// A call that could not connect or read the answer.
    Connection,
    /// Any other failed call.
    Other,
}

impl ErrorKind {
    /// A fixed label for metrics and logs (never object data).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::Ambiguous => "ambiguous",
            ErrorKind::NotConnected => "not_connected",
            ErrorKind::Credentials => "credentials",
            ErrorKind::Auth => "auth",
            ErrorKind::Tls => "tls",
            ErrorKind::Timeout => "timeout",
            ErrorKind::ServerError => "server_error",
            ErrorKind::Connection => "connection",
            ErrorKind::Other => "error",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// The kind, for metric labels and retry decisions.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::Ambiguous { .. } => ErrorKind::Ambiguous,
            Error::NotConnected { .. } => ErrorKind::NotConnected,
            Error::Credentials(_) => ErrorKind::Credentials,
            Error::Auth(_) => ErrorKind::Auth,
            Error::Tls(_) => ErrorKind::Tls,
            Error::Call { source, .. } => match source.kind() {
                osauth::ErrorKind::OperationTimedOut => ErrorKind::Timeout,
                osauth::ErrorKind::InternalServerError => ErrorKind::ServerError,
                osauth::ErrorKind::ProtocolError => ErrorKind::Connection,
                _ => ErrorKind::Other,
            },
        }
    }

    /// True for [`Error::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
    }

    /// True for a call answered 409 Conflict (Octavia: the load balancer is locked while
    /// `PENDING_*`, or what was asked clashes with what is there).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Call { source, .. } if source.kind() == osauth::ErrorKind::Conflict)
    }
}

/// Result alias for this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How a node's server is found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// By server UUID (from `spec.providerID`).
    Id(String),
    /// By exact server name (the node name).
    Name(String),
}

/// Servers whose ports one request asks for: 50 UUIDs keep the URL near 2.5 KB.
pub const PORTS_PER_REQUEST: usize = 50;

/// A server with what address selection and labels need.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Instance {
    /// The server.
    pub server: Server,
    /// Its Neutron ports.
    pub ports: Vec<Port>,
    /// Its flavor name (from the server body at microversion ≥ 2.47, else the cached flavor).
    pub flavor_name: Option<String>,
}

/// What the controllers need from OpenStack.
pub trait Cloud: Send + Sync + 'static {
    /// The server only (lifecycle checks). Not found is [`Error::NotFound`] on both lookup paths.
    fn server(&self, lookup: &Lookup) -> impl Future<Output = Result<Server>> + Send;
    /// The server with ports and flavor name (node initialization).
    fn instance(&self, lookup: &Lookup) -> impl Future<Output = Result<Instance>> + Send;
    /// Every server of the project (`since` = `None`), or those changed at or after `since`
    /// (Nova's `changes-since`, which also returns the servers deleted since, status
    /// `DELETED`): one request per page of 1,000.
    fn servers(&self, since: Option<&str>) -> impl Future<Output = Result<Vec<Server>>> + Send;
    /// ID, name and status of every server (lifecycle): one request per page of 1,000.
    fn server_states(&self) -> impl Future<Output = Result<Vec<ServerState>>> + Send;
    /// The ports of these servers (a request per [`PORTS_PER_REQUEST`] of them; none for an
    /// empty list), or with `None` every port of the project in one request.
    fn ports(&self, devices: Option<&[String]>) -> impl Future<Output = Result<Vec<Port>>> + Send;
    /// The configured region, for the topology label and regional providerIDs.
    fn region(&self) -> Option<String>;
}
