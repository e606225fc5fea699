//! URL checks for proxies and endpoint overrides, with Go `net/url`'s messages.

use super::field::go_quote;

/// Go's `url.ParseRequestURI`: an absolute URL or an absolute path. Returns the scheme
/// (lowercased; `""` for a path).
pub(crate) fn request_uri(text: &str) -> Result<String, String> {
    let quoted = go_quote(text);
    if text.chars().any(|c| c.is_ascii_control()) {
        return Err(format!("parse {quoted}: net/url: invalid control character in URL"));
    }
    if text.starts_with('/') {
        return Ok(String::new());
    }
    let Some((scheme, rest)) = split_scheme(text) else {
        return Err(format!("parse {quoted}: invalid URI for request"));
    };
    if let Some(authority) = rest.strip_prefix("//") {
        let end = authority.find(['/', '?', '#']).unwrap_or(authority.len());
        let authority = &authority[..end];
        let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
        if let Some(bad) = host
            .chars()
            .find(|c| matches!(c, ' ' | '<' | '>' | '"' | '{' | '}' | '|' | '\\' | '^' | '`'))
        {
            return Err(format!(
                "parse {quoted}: invalid character {} in host name",
                go_quote(&bad.to_string())
            ));
        }
    }
    Ok(scheme.to_ascii_lowercase())
}

/// `scheme:rest` when `text` starts with an RFC 3986 scheme.
fn split_scheme(text: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = text.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let valid = first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some((scheme, rest))
}

/// An endpoint override URL split for checking: its scheme (lowercased), host (without user
/// or port) and Go's `RequestURI` (path and query, `/` when empty). `https://` is assumed
/// when no scheme is given, as the installer's `validateServiceURL` does.
struct Endpoint {
    scheme: String,
    host: String,
    request: String,
}

impl Endpoint {
    fn parse(text: &str) -> Result<Self, String> {
        let with_scheme =
            if text.contains("://") { text.to_owned() } else { format!("https://{text}") };
        let scheme = request_uri(&with_scheme)?;
        let rest = with_scheme.split_once("://").map_or("", |(_, rest)| rest);
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
        let host = host.rsplit_once(':').map_or(host, |(host, _)| host).to_owned();
        let request = tail.split('#').next().unwrap_or("");
        let request = if request.is_empty() || request.starts_with('?') {
            format!("/{request}")
        } else {
            request.to_owned()
        };
        Ok(Self { scheme, host, request })
    }
}

const EMPTY_HOST: &str = "host cannot be empty, empty host provided";

/// An endpoint override URL on GCP and IBM Cloud: http or https, and a host.
pub(crate) fn absolute(text: &str) -> Result<(), String> {
    let endpoint = Endpoint::parse(text)?;
    if !matches!(endpoint.scheme.as_str(), "http" | "https") {
        let scheme = endpoint.scheme;
        return Err(format!("invalid scheme {scheme}, only http and https allowed"));
    }
    if endpoint.host.is_empty() {
        return Err(EMPTY_HOST.to_owned());
    }
    Ok(())
}

/// The installer's AWS `validateServiceURL`: a host, then the https scheme, then no path or
/// query, in that order.
pub(crate) fn aws_service_url(text: &str) -> Result<(), String> {
    let endpoint = Endpoint::parse(text)?;
    if endpoint.host.is_empty() {
        return Err(EMPTY_HOST.to_owned());
    }
    if endpoint.scheme != "https" {
        return Err(format!("invalid scheme {}, only https allowed", endpoint.scheme));
    }
    if endpoint.request != "/" {
        let request = go_quote(&endpoint.request);
        return Err(format!(
            "no path or request parameters must be provided, {request} was provided"
        ));
    }
    Ok(())
}

/// The installer's PowerVS `validateServiceURL`: a host, then the https scheme, then no path
/// or query but an API version (`/v1`, `/v22/`).
pub(crate) fn powervs_service_url(text: &str) -> Result<(), String> {
    let endpoint = Endpoint::parse(text)?;
    if endpoint.host.is_empty() {
        return Err("empty hostname provided, it cannot be empty".to_owned());
    }
    if endpoint.scheme != "https" {
        return Err(format!("invalid scheme {}, only https is allowed", endpoint.scheme));
    }
    let request = endpoint.request.as_str();
    if request != "/" && !is_version_path(request) {
        let request = go_quote(request);
        return Err(format!(
            "no path or request parameters can be provided, {request} was provided"
        ));
    }
    Ok(())
}

/// Whether `request` is nothing but a trailing API version: `/v<digits>`, maybe with `/`.
fn is_version_path(request: &str) -> bool {
    let trimmed = request.strip_suffix('/').unwrap_or(request);
    trimmed
        .strip_prefix("/v")
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_uris_follow_go() {
        assert_eq!(request_uri("http://proxy:3128").unwrap(), "http");
        assert_eq!(request_uri("HTTPS://u:p@proxy").unwrap(), "https");
        assert_eq!(request_uri("/only/a/path").unwrap(), "");
        assert_eq!(
            request_uri("proxy.example.com").unwrap_err(),
            r#"parse "proxy.example.com": invalid URI for request"#
        );
        assert_eq!(
            request_uri("http://a b").unwrap_err(),
            r#"parse "http://a b": invalid character " " in host name"#
        );
    }

    #[test]
    fn aws_endpoints_are_https_hosts_without_a_path() {
        assert!(aws_service_url("https://ec2.example.com").is_ok());
        assert!(aws_service_url("ec2.example.com:8443/").is_ok());
        assert_eq!(aws_service_url("http://").unwrap_err(), EMPTY_HOST);
        assert_eq!(
            aws_service_url("http://ec2.example.com").unwrap_err(),
            "invalid scheme http, only https allowed"
        );
        assert_eq!(
            aws_service_url("ec2.example.com/v1?a=b#frag").unwrap_err(),
            r#"no path or request parameters must be provided, "/v1?a=b" was provided"#
        );
        assert_eq!(
            aws_service_url("https://ec2.example.com?a").unwrap_err(),
            r#"no path or request parameters must be provided, "/?a" was provided"#
        );
    }

    #[test]
    fn endpoints_need_a_host() {
        assert!(absolute("https://ec2.example.com").is_ok());
        assert!(absolute("ec2.example.com/v1").is_ok());
        assert_eq!(absolute("https://").unwrap_err(), "host cannot be empty, empty host provided");
        assert_eq!(
            absolute("ftp://x").unwrap_err(),
            "invalid scheme ftp, only http and https allowed"
        );
    }
}
