//! Which subnets of the floating network a floating IP may come from, as upstream reads
//! `floating-subnet` (a name pattern) and `floating-subnet-tags` when no `floating-subnet-id`
//! is given.
//!
//! Name pattern: a glob (`*`, `?`), or a regular expression after `~`; a leading `!` negates;
//! the whole name must match. Tags: a comma-separated list; a leading `!` negates, then a
//! leading `&` asks for all of them instead of any; Neutron filters by them (`tags-any`,
//! `tags`, `not-tags`, `not-tags-any`), the name is matched here. The candidates are tried in
//! Neutron's order until one has a free address.

use regex::Regex;

use crate::config::FloatingSubnet;

/// A parsed `floating-subnet` / `floating-subnet-tags` pair.
#[derive(Debug, Clone)]
pub(crate) struct Matcher {
    name: Option<(Regex, bool)>,
    /// The Neutron query filter for the tags: (`tags-any` | `tags` | `not-tags` |
    /// `not-tags-any`, comma-separated tags).
    pub(crate) tag_filter: Option<(&'static str, String)>,
}

impl Matcher {
    /// `None` when the spec names a subnet by ID or sets neither pattern nor tags.
    pub(crate) fn new(spec: &FloatingSubnet) -> Result<Option<Matcher>, String> {
        if spec.id.is_some() || (spec.pattern.is_none() && spec.tags.is_none()) {
            return Ok(None);
        }
        let name = spec.pattern.as_deref().map(name_pattern).transpose()?;
        let tag_filter = spec.tags.as_deref().and_then(tag_filter);
        Ok(Some(Matcher { name, tag_filter }))
    }

    /// Whether a subnet of that name (already filtered by tags) is a candidate.
    pub(crate) fn matches(&self, name: &str) -> bool {
        self.name.as_ref().is_none_or(|(regex, negated)| regex.is_match(name) != *negated)
    }
}

fn name_pattern(pattern: &str) -> Result<(Regex, bool), String> {
    let (negated, pattern) = match pattern.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, pattern),
    };
    let body = match pattern.strip_prefix('~') {
        Some(regex) => regex.to_owned(),
        None => glob(pattern),
    };
    let regex = Regex::new(&format!("^(?:{body})$"))
        .map_err(|e| format!("floating-subnet {pattern:?}: not a valid pattern: {e}"))?;
    Ok((regex, negated))
}

/// A glob as a regular expression: `*` any run, `?` any one character, the rest literal.
fn glob(pattern: &str) -> String {
    let mut out = String::new();
    for c in pattern.chars() {
        match c {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            c => out.push_str(&regex::escape(&c.to_string())),
        }
    }
    out
}

fn tag_filter(tags: &str) -> Option<(&'static str, String)> {
    let (not, tags) = match tags.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, tags),
    };
    let (all, tags) = match tags.strip_prefix('&') {
        Some(rest) => (true, rest),
        None => (false, tags),
    };
    let list: Vec<&str> = tags.split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
    if list.is_empty() {
        return None;
    }
    let key = match (not, all) {
        (false, false) => "tags-any",
        (false, true) => "tags",
        (true, false) => "not-tags",
        (true, true) => "not-tags-any",
    };
    Some((key, list.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pattern: Option<&str>, tags: Option<&str>) -> FloatingSubnet {
        FloatingSubnet { id: None, pattern: pattern.map(Into::into), tags: tags.map(Into::into) }
    }

    fn matcher(pattern: &str) -> Matcher {
        Matcher::new(&spec(Some(pattern), None)).unwrap().unwrap()
    }

    #[test]
    fn a_glob_a_regex_and_a_negation_match_the_whole_name() {
        assert!(matcher("public-*").matches("public-v4"));
        assert!(!matcher("public-*").matches("my-public-v4"), "the whole name");
        assert!(matcher("pub?ic").matches("public") && !matcher("pub?ic").matches("pubic"));
        assert!(matcher("a.b").matches("a.b") && !matcher("a.b").matches("axb"), "dots literal");
        assert!(matcher("~pub(lic|v4)-[0-9]+").matches("pubv4-2"));
        assert!(matcher("~pub(lic|v4)-[0-9]+").matches("public-12"));
        assert!(!matcher("~pub(lic|v4)-[0-9]+").matches("public-12x"));
        assert!(
            matcher("!public-*").matches("private") && !matcher("!public-*").matches("public-1")
        );
    }

    #[test]
    fn tags_become_neutron_filters() {
        let filter =
            |tags: &str| Matcher::new(&spec(None, Some(tags))).unwrap().unwrap().tag_filter;
        assert_eq!(filter("a, b"), Some(("tags-any", "a,b".into())));
        assert_eq!(filter("&a,b"), Some(("tags", "a,b".into())));
        assert_eq!(filter("!a"), Some(("not-tags", "a".into())));
        assert_eq!(filter("!&a,b"), Some(("not-tags-any", "a,b".into())));
        assert!(Matcher::new(&spec(None, Some("x"))).unwrap().unwrap().matches("any name"));
    }

    #[test]
    fn an_id_or_nothing_needs_no_matcher_and_a_bad_regex_is_named() {
        let by_id = FloatingSubnet { id: Some("s".into()), ..spec(Some("x"), None) };
        assert!(Matcher::new(&by_id).unwrap().is_none());
        assert!(Matcher::new(&spec(None, None)).unwrap().is_none());
        let err = Matcher::new(&spec(Some("~(unclosed"), None)).unwrap_err();
        assert!(err.starts_with("floating-subnet \"~(unclosed\": not a valid pattern"), "{err}");
    }
}
