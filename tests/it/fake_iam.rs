//! A stand-in for IBM Cloud IAM: IBM's service cannot run here, so this speaks the two calls
//! of its protocol that find an API key's account, over HTTPS/1.1 on 127.0.0.1 with a
//! certificate from a private CA (given to `create manifests` as `additionalTrustBundle`).
//!
//! - `POST /identity/token`, form `grant_type=urn:ibm:params:oauth:grant-type:apikey&apikey=K`:
//!   a bearer token for a known key, else IAM's `BXNIM0415E` error document (HTTP 400).
//! - `GET /v1/apikeys/details` with `Authorization: Bearer T` and `IAM-ApiKey: K`: the key's
//!   details (`account_id`, `iam_id`, …) when the token was issued for that key, else the
//!   identity API's `{errors: [...]}` document (HTTP 401).
//!
//! Every request is recorded so tests can check what was sent.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use testkit::tls::{TestCa, Validity};

/// The grant IAM requires for API keys.
const GRANT: &str = "urn:ibm:params:oauth:grant-type:apikey";

/// One request as received: method, path, lowercased header names, body.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: String,
}

/// A running fake; it serves until the test process ends.
pub(crate) struct FakeIam {
    url: String,
    ca: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl FakeIam {
    /// Serves `keys` (API key → account ID) on a free port.
    pub(crate) fn start(keys: &[(&str, &str)]) -> FakeIam {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let url = format!("https://{}", listener.local_addr().expect("bound address"));
        let ca = TestCa::new("fake IAM CA");
        let (cert, key) = ca.server(&["127.0.0.1"], Validity::Now);
        let tls = Arc::new(testkit::tls::server_config(&cert, &key));
        let keys: BTreeMap<String, String> =
            keys.iter().map(|(k, a)| ((*k).to_owned(), (*a).to_owned())).collect();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let Ok(session) = rustls::ServerConnection::new(Arc::clone(&tls)) else { continue };
                if let Some(request) = serve(rustls::StreamOwned::new(session, stream), &keys) {
                    seen.lock().expect("requests").push(request);
                }
            }
        });
        FakeIam { url, ca: ca.pem(), requests }
    }

    /// `https://127.0.0.1:<port>`, for the install-config's `IAM` service endpoint.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The CA that signed its certificate (PEM), for `additionalTrustBundle`.
    pub(crate) fn ca(&self) -> &str {
        &self.ca
    }

    /// What was received so far, in order.
    pub(crate) fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("requests").clone()
    }
}

/// The token issued for `key`: derived from it, so a token is only good for its own key.
fn token_for(key: &str) -> String {
    format!("eyJfake.{}", key.bytes().map(|b| format!("{b:02x}")).collect::<String>())
}

/// Reads one request, answers it and closes the connection (a client that does not trust the
/// certificate fails the handshake: nothing is recorded).
fn serve(stream: impl Read + Write, keys: &BTreeMap<String, String>) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let request = read_request(&mut reader)?;
    let (status, body) = answer(&request, keys);
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        _ => "Not Found",
    };
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let stream = reader.get_mut();
    stream.write_all(response.as_bytes()).ok()?;
    stream.flush().ok()?;
    Some(request)
}

fn read_request(reader: &mut impl BufRead) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = BTreeMap::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    let length: usize = headers.get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request { method, path, headers, body: String::from_utf8(body).ok()? })
}

fn answer(request: &Request, keys: &BTreeMap<String, String>) -> (u16, String) {
    let header = |name: &str| request.headers.get(name).map(String::as_str).unwrap_or("");
    match (request.method.as_str(), request.path.as_str()) {
        ("POST", "/identity/token") => {
            let form = parse_form(&request.body);
            let field = |name: &str| form.get(name).map(String::as_str).unwrap_or("");
            if header("content-type") != "application/x-www-form-urlencoded" {
                return token_error(
                    "BXNIM0109E",
                    "Property missing or empty. Property: grant_type",
                );
            }
            if field("grant_type") != GRANT {
                return token_error("BXNIM0109E", "Unsupported grant_type.");
            }
            if !keys.contains_key(field("apikey")) {
                return token_error("BXNIM0415E", "Provided API key could not be found.");
            }
            let token = token_for(field("apikey"));
            let body = format!(
                r#"{{"access_token":"{token}","refresh_token":"not_supported","token_type":"Bearer","expires_in":3600,"expiration":1700000000,"scope":"ibm openid"}}"#
            );
            (200, body)
        }
        ("GET", "/v1/apikeys/details") => {
            let key = header("iam-apikey");
            let authorized = header("authorization") == format!("Bearer {}", token_for(key));
            match keys.get(key) {
                Some(account) if authorized => (
                    200,
                    format!(
                        r#"{{"context":{{"transaction_id":"fake"}},"id":"ApiKey-1","entity_tag":"1-x","crn":"crn:v1:bluemix:public:iam-identity::a/{account}::apikey:ApiKey-1","locked":false,"name":"installer","iam_id":"IBMid-fake","account_id":"{account}","apikey":""}}"#
                    ),
                ),
                _ => (
                    401,
                    r#"{"errors":[{"code":"BXNIM0308E","message":"No authorization header found or token invalid."}],"trace":"fake","status_code":401}"#
                        .to_owned(),
                ),
            }
        }
        _ => (404, r#"{"errors":[{"code":"not_found","message":"Not found."}]}"#.to_owned()),
    }
}

fn token_error(code: &str, message: &str) -> (u16, String) {
    (400, format!(r#"{{"errorCode":"{code}","errorMessage":"{message}","context":{{}}}}"#))
}

/// `application/x-www-form-urlencoded` decoding.
fn parse_form(body: &str) -> BTreeMap<String, String> {
    body.split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 2;
            }
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
