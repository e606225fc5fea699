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

/// An endpoint override URL: `https://` is assumed when no scheme is given, and a host is
/// required (the installer's `validateServiceURL`, without its https-only rule on AWS).
pub(crate) fn absolute(text: &str) -> Result<(), String> {
    let with_scheme =
        if text.contains("://") { text.to_owned() } else { format!("https://{text}") };
    let scheme = request_uri(&with_scheme)?;
    if !matches!(scheme.as_str(), "http" | "https") {
        return Err(format!("invalid scheme {scheme}, only http and https allowed"));
    }
    let authority = with_scheme
        .split_once("://")
        .map_or("", |(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(""));
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = host.rsplit_once(':').map_or(host, |(host, _)| host);
    if host.is_empty() {
        return Err("host cannot be empty, empty host provided".to_owned());
    }
    Ok(())
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
