//! The two IBM IAM calls that find an API key's account ID: request builders and response parsers.
//!
//! The installer asks through the platform-services SDK (`iamidentityv1.GetAPIKeysDetails`,
//! called from `pkg/asset/installconfig/ibmcloud/client.go`): the key is exchanged for a token
//! (`POST {iam}/identity/token`), then `GET {iam}/v1/apikeys/details` with the token and the key
//! answers with the key's `account_id`. The builders and parsers here are pure; [`online`]
//! sends the requests. Keys and tokens are [`Secret`]s, so no `Debug` output shows them.

pub mod online;

use serde::Deserialize;

use super::cloud_conf;
use crate::installconfig::IbmService;
use crate::installconfig::{Secret, ServiceEndpoint};

/// The public IAM endpoint, used unless an `IAM` service endpoint overrides it.
pub const DEFAULT_ENDPOINT: &str = "https://iam.cloud.ibm.com";

/// The OAuth grant that exchanges an API key for a token.
pub const GRANT_TYPE: &str = "urn:ibm:params:oauth:grant-type:apikey";

/// `Content-Type` of the token request's body.
pub const TOKEN_CONTENT_TYPE: &str = "application/x-www-form-urlencoded";

/// An answer from IAM that does not give what was asked. Messages carry IAM's error code and
/// text, never a key or a token.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// IAM refused (a non-2xx status), with the code and message of its error body.
    #[error("IAM answered HTTP {status}: {message}{}", code_suffix(code))]
    Refused {
        /// The HTTP status.
        status: u16,
        /// IAM's error code (`BXNIM0415E`, `not_found`), empty when the body had none.
        code: String,
        /// IAM's message, or the start of the body when it is not an IAM error document.
        message: String,
    },
    /// A 2xx answer whose body is not the expected JSON.
    #[error("IAM answered HTTP {status} with an unexpected body")]
    Malformed {
        /// The HTTP status.
        status: u16,
        /// Why the body did not parse.
        #[source]
        source: serde_json::Error,
    },
    /// The API key details carry an empty `account_id`.
    #[error("IAM returned no account_id for the API key")]
    NoAccount,
    /// IAM could not be reached, or did not answer in time.
    #[error("{0}")]
    Transport(String),
}

/// Result alias for this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn code_suffix(code: &str) -> String {
    if code.is_empty() { String::new() } else { format!(" ({code})") }
}

/// The IAM base URL: the `IAM` service endpoint override (`platform.*.serviceEndpoints`),
/// else [`DEFAULT_ENDPOINT`]; without a trailing `/`.
pub fn endpoint(endpoints: &[ServiceEndpoint]) -> &str {
    cloud_conf::endpoint(endpoints, IbmService::Iam)
        .filter(|url| !url.is_empty())
        .unwrap_or(DEFAULT_ENDPOINT)
        .trim_end_matches('/')
}

/// `POST` here to exchange the key for a token.
pub fn token_url(endpoint: &str) -> String {
    format!("{}/identity/token", endpoint.trim_end_matches('/'))
}

/// The token request's form body (`grant_type=…&apikey=…`, [`TOKEN_CONTENT_TYPE`]); send it
/// with `Accept: application/json`.
pub fn token_form(api_key: &Secret) -> String {
    format!("grant_type={}&apikey={}", form_encode(GRANT_TYPE), form_encode(api_key.expose()))
}

/// `GET` here, with [`api_key_details_headers`], for the key's details.
pub fn api_key_details_url(endpoint: &str) -> String {
    format!("{}/v1/apikeys/details", endpoint.trim_end_matches('/'))
}

/// The details request's headers: the token as a bearer, the key itself in `IAM-ApiKey`.
pub fn api_key_details_headers(token: &Secret, api_key: &Secret) -> [(&'static str, String); 3] {
    [
        ("Authorization", format!("Bearer {}", token.expose())),
        ("IAM-ApiKey", api_key.expose().to_owned()),
        ("Accept", "application/json".to_owned()),
    ]
}

/// The token endpoint's answer (only the field used).
#[derive(Debug, Deserialize)]
pub struct TokenResponse {
    /// The bearer token; redacted in `Debug`.
    pub access_token: Secret,
}

/// `iamidentityv1.APIKey`, the details endpoint's answer (only the fields used).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ApiKeyDetails {
    /// The account the key belongs to: the CCM's `accountID`.
    pub account_id: String,
    /// The identity the key acts as.
    pub iam_id: String,
    /// The key's display name.
    pub name: String,
}

/// The token from the token endpoint's answer.
pub fn parse_token(status: u16, body: &str) -> Result<Secret> {
    Ok(parse::<TokenResponse>(status, body)?.access_token)
}

/// The account ID from the details endpoint's answer.
pub fn parse_account_id(status: u16, body: &str) -> Result<String> {
    let details: ApiKeyDetails = parse(status, body)?;
    if details.account_id.is_empty() {
        return Err(Error::NoAccount);
    }
    Ok(details.account_id)
}

fn parse<T: for<'de> Deserialize<'de>>(status: u16, body: &str) -> Result<T> {
    if !(200..300).contains(&status) {
        return Err(refused(status, body));
    }
    serde_json::from_str(body).map_err(|source| Error::Malformed { status, source })
}

/// IAM's two error documents: the token endpoint's `{errorCode, errorMessage}` and the
/// identity API's `{errors: [{code, message}], trace, status_code}`.
#[derive(Deserialize)]
#[serde(untagged)]
enum ErrorBody {
    Token {
        #[serde(rename = "errorCode", default)]
        code: String,
        #[serde(rename = "errorMessage")]
        message: String,
    },
    Identity {
        errors: Vec<ErrorItem>,
    },
}

#[derive(Deserialize)]
struct ErrorItem {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

fn refused(status: u16, body: &str) -> Error {
    let (code, message) = match serde_json::from_str::<ErrorBody>(body) {
        Ok(ErrorBody::Token { code, message }) => (code, message),
        Ok(ErrorBody::Identity { errors }) => {
            let first = errors.into_iter().next();
            first.map(|e| (e.code, e.message)).unwrap_or_default()
        }
        // Not an IAM document (a proxy's HTML page, say): show its start.
        Err(_) => (String::new(), body.trim().chars().take(200).collect()),
    };
    Error::Refused { status, code, message }
}

/// `application/x-www-form-urlencoded` escaping: unreserved characters as is, space as `+`,
/// every other byte as `%XX`.
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                out.push(char::from(byte));
            }
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Secret {
        Secret::new("k3y_With-odd/+chars")
    }

    #[test]
    fn requests_go_to_the_public_endpoint_unless_iam_is_overridden() {
        assert_eq!(endpoint(&[]), "https://iam.cloud.ibm.com");
        let over = [ServiceEndpoint {
            name: "IAM".into(),
            url: "https://private.iam.cloud.ibm.com/".into(),
        }];
        assert_eq!(endpoint(&over), "https://private.iam.cloud.ibm.com");
        assert_eq!(token_url(endpoint(&over)), "https://private.iam.cloud.ibm.com/identity/token");
        assert_eq!(
            api_key_details_url(DEFAULT_ENDPOINT),
            "https://iam.cloud.ibm.com/v1/apikeys/details"
        );
    }

    #[test]
    fn the_token_form_escapes_the_grant_and_the_key() {
        assert_eq!(
            token_form(&key()),
            "grant_type=urn%3Aibm%3Aparams%3Aoauth%3Agrant-type%3Aapikey&apikey=k3y_With-odd%2F%2Bchars"
        );
    }

    #[test]
    fn the_details_request_carries_the_token_and_the_key() {
        let headers = api_key_details_headers(&Secret::new("tok"), &key());
        assert_eq!(headers[0], ("Authorization", "Bearer tok".to_owned()));
        assert_eq!(headers[1], ("IAM-ApiKey", "k3y_With-odd/+chars".to_owned()));
        assert_eq!(headers[2], ("Accept", "application/json".to_owned()));
    }

    #[test]
    fn successful_answers_give_the_token_and_the_account() {
        let token = parse_token(
            200,
            r#"{"access_token":"eyJ.abc","refresh_token":"not_supported","token_type":"Bearer","expires_in":3600,"expiration":1700000000,"scope":"ibm openid"}"#,
        )
        .unwrap();
        assert_eq!(token.expose(), "eyJ.abc");
        assert_eq!(format!("{token:?}"), "<redacted>");
        let details = r#"{"context":{"transaction_id":"t"},"id":"ApiKey-1","entity_tag":"1-x","crn":"crn:v1:bluemix:public:iam-identity::a/1e1f75646aef447814a6d907cc83fb3c::apikey:ApiKey-1","locked":false,"name":"installer","iam_id":"IBMid-123","account_id":"1e1f75646aef447814a6d907cc83fb3c","apikey":""}"#;
        assert_eq!(parse_account_id(200, details).unwrap(), "1e1f75646aef447814a6d907cc83fb3c");
    }

    #[test]
    fn iam_error_documents_of_both_shapes_become_refusals() {
        let token_error = r#"{"errorCode":"BXNIM0415E","errorMessage":"Provided API key could not be found.","context":{"requestId":"r"}}"#;
        let err = parse_token(400, token_error).unwrap_err();
        assert_eq!(
            err.to_string(),
            "IAM answered HTTP 400: Provided API key could not be found. (BXNIM0415E)"
        );
        let identity_error = r#"{"errors":[{"code":"not_found","message":"API key not found.","more_info":"https://cloud.ibm.com/apidocs/iam-identity-token-api"}],"trace":"abc","status_code":404}"#;
        let err = parse_account_id(404, identity_error).unwrap_err();
        assert!(
            matches!(&err, Error::Refused { status: 404, code, .. } if code == "not_found"),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "IAM answered HTTP 404: API key not found. (not_found)");
        let html = parse_account_id(502, "<html>Bad Gateway</html>").unwrap_err();
        assert_eq!(html.to_string(), "IAM answered HTTP 502: <html>Bad Gateway</html>");
    }

    #[test]
    fn malformed_or_empty_answers_are_errors() {
        assert!(matches!(parse_token(200, "{}"), Err(Error::Malformed { status: 200, .. })));
        assert!(matches!(parse_account_id(200, r#"{"account_id":""}"#), Err(Error::NoAccount)));
        assert!(matches!(parse_account_id(200, "not json"), Err(Error::Malformed { .. })));
    }
}
