//! IBM Cloud's service endpoint overrides must answer, as the installer checks them when it is
//! not offline: a HEAD request to each URL, any answer will do (a 404 too), a transport error is
//! `Invalid value`. The installer has no http/https rule for IBM Cloud's overrides; an answer
//! over either is enough. PowerVS has no such check.

use crate::assets::ibm::iam::online;
use crate::installconfig::ServiceEndpoint;

/// HEADs each URL in turn (through the environment's proxies, trusting `trust_bundle` besides
/// the web roots); every one that does not answer is a line of the error, in the installer's
/// words: `platform.ibmcloud.serviceEndpoints[i].url: Invalid value: "<url>": Head "<url>":
/// <reason>`.
pub(crate) fn check(
    endpoints: &[ServiceEndpoint],
    trust_bundle: Option<&str>,
) -> anyhow::Result<()> {
    if endpoints.is_empty() {
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let errors = runtime.block_on(async {
        // A client of its own: a HEAD answer's stray body must not reach a later request.
        let client = online::client(trust_bundle)?;
        let mut errors = Vec::new();
        for (i, endpoint) in endpoints.iter().enumerate() {
            let url = &endpoint.url;
            if let Err(e) = client.head(url).send().await {
                errors.push(format!(
                    "platform.ibmcloud.serviceEndpoints[{i}].url: Invalid value: {url:?}: Head \
                     {url:?}: {}",
                    online::describe(&e)
                ));
            }
        }
        Ok::<_, String>(errors)
    });
    let errors = errors.map_err(anyhow::Error::msg)?;
    if errors.is_empty() { Ok(()) } else { anyhow::bail!(errors.join("\n")) }
}
