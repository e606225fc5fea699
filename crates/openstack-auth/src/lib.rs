//! One OpenStack identity for both binaries (the generator's cloud lookups and the CCM):
//!
//! ```text
//!  credentials  what a cloud.conf `[Global]` or a clouds.yaml entry says about who we are,
//!               where Keystone is and how to trust it; the keys named as the source names them
//!  session      the HTTP client (CA bundles, verify off, client certificate, timeouts) and one
//!               Keystone login (password, token, application credential) into an osauth
//!               session bound to region, interface and endpoint overrides; a failed TLS
//!               handshake explained in one line (ccm-tls-explain)
//!  keystone     that login, as the session's osauth `AuthType`: the token request, the token
//!               and its catalog kept and renewed by our rule, or on a refused call, once
//!  renewal      the rule: renewed when less than half its lifetime (at most 10 minutes) is left
//!  tls          that client's rustls configuration: roots, bundles, verify off, and the
//!               client certificate presented as given (X.509 v1 too)
//! ```
//!
//! Each binary keeps only what is its own: where the values come from (cloud.conf parsing and
//! the credentials Secret in the CCM, the install-config's trust bundle in the generator) and
//! what it does with the session.

mod credentials;
mod keystone;
mod renewal;
mod session;
mod tls;

pub use credentials::{Credentials, Interface, Origin};
pub use session::{Error, connect};
