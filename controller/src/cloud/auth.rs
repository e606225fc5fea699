//! Keystone login from [`Credentials`], through the login both binaries share
//! (`ccm-openstack-auth`): its errors as the controller's.

use std::time::Duration;

use osauth::Session;

use super::{Error, Result};
use crate::config::Credentials;

/// Authenticates once with these credentials and returns a session bound to region and interface.
pub async fn connect(credentials: &Credentials, timeout: Duration) -> Result<Session> {
    use ccm_openstack_auth::Error as Login;
    ccm_openstack_auth::connect(credentials, timeout).await.map_err(|e| match e {
        Login::Credentials(message) => Error::Credentials(message),
        Login::Auth(source) => Error::Auth(source),
        Login::Tls(line) => Error::Tls(line),
        Login::Call(source) => Error::Call { operation: "authenticate", source },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn login_errors_keep_their_kind() {
        let timeout = Duration::from_secs(1);
        let err = connect(&Credentials::default(), timeout).await.unwrap_err();
        assert_eq!(err.to_string(), "OpenStack credentials: auth-url is not set");
        let unreachable = Credentials {
            auth_url: Some("http://127.0.0.1:9/v3".into()),
            token: Some("t".to_owned().into()),
            ..Credentials::default()
        };
        let err = connect(&unreachable, timeout).await.unwrap_err();
        assert_eq!(err.kind().as_str(), "connection");
    }
}
