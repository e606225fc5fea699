//! The IAM calls themselves: the API key's account, asked over HTTPS under a timeout.
//!
//! The requests and answers are [`super`]'s; this only sends them. Proxies come from the
//! usual `HTTPS_PROXY`/`NO_PROXY` variables, as for the installer.

use std::time::Duration;

use super::{Error, Result};
use crate::installconfig::Secret;

/// IAM that does not answer must not hang `create manifests`.
const TIMEOUT: Duration = Duration::from_secs(30);

/// How a TLS failure with IAM is fixed: the install-config's trust bundle.
const TRUST: ccm_tls_explain::Settings = ccm_tls_explain::Settings {
    ca: "set additionalTrustBundle in install-config.yaml to",
    insecure: None,
};

/// The account the API key belongs to: a token for the key, then the key's details, both
/// from IAM at `endpoint` ([`super::endpoint`]), trusting the web roots and `trust_bundle`
/// (the install-config's `additionalTrustBundle`).
pub fn account_id(endpoint: &str, api_key: &Secret, trust_bundle: Option<&str>) -> Result<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Transport(format!("could not start the HTTP client: {e}")))?;
    runtime.block_on(ask(endpoint, api_key, trust_bundle))
}

async fn ask(endpoint: &str, api_key: &Secret, trust_bundle: Option<&str>) -> Result<String> {
    let client = client(trust_bundle).map_err(Error::Transport)?;
    let token = client
        .post(super::token_url(endpoint))
        .header("Content-Type", super::TOKEN_CONTENT_TYPE)
        .header("Accept", "application/json")
        .body(super::token_form(api_key));
    let (status, body) = send(token).await?;
    let token = super::parse_token(status, &body)?;
    let mut details = client.get(super::api_key_details_url(endpoint));
    for (name, value) in super::api_key_details_headers(&token, api_key) {
        details = details.header(name, value);
    }
    let (status, body) = send(details).await?;
    super::parse_account_id(status, &body)
}

/// An HTTP client for IBM Cloud's services: the web roots and `trust_bundle` (the
/// install-config's `additionalTrustBundle`), proxies from the environment, a timeout.
pub(crate) fn client(trust_bundle: Option<&str>) -> std::result::Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .user_agent(concat!("ccm-assets/", env!("CARGO_PKG_VERSION")));
    if let Some(pem) = trust_bundle {
        (builder, _) = ccm_tls_explain::trust_bundle(builder, pem.as_bytes())
            .map_err(|e| format!("additionalTrustBundle is not a PEM bundle: {e}"))?;
    }
    builder.build().map_err(|e| describe(&e))
}

async fn send(request: reqwest::RequestBuilder) -> Result<(u16, String)> {
    let response = request.send().await.map_err(transport)?;
    let status = response.status().as_u16();
    Ok((status, response.text().await.map_err(transport)?))
}

/// reqwest's message with its causes (or, for a failed TLS handshake, what failed and how to
/// fix it); it names the URL, which carries no secret.
fn transport(error: reqwest::Error) -> Error {
    Error::Transport(describe(&error))
}

/// reqwest's message with its causes, or for a failed TLS handshake what failed and how to fix
/// it.
pub(crate) fn describe(error: &reqwest::Error) -> String {
    if let Some(line) = ccm_tls_explain::from_error(error, TRUST) {
        return line;
    }
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
