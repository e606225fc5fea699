//! Label selectors (`=`, `==`, `!=`, `in (…)`, `notin (…)`, `key`, `!key`) and field selectors
//! (`path=value`, `path!=value` on any string field), as list and watch filter them.

use serde_json::Value;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// Parses `text`; the error says which term is wrong.
    pub(crate) fn parse(text: &str) -> Result<LabelSelector, String> {
        let mut requirements = Vec::new();
        for term in split_terms(text) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            requirements.push(requirement(term)?);
        }
        Ok(LabelSelector(requirements))
    }

    /// Whether `object`'s `metadata.labels` satisfy every requirement.
    pub(crate) fn matches(&self, object: &Value) -> bool {
        // Read in place: a list or a watch asks this of every object it passes.
        let labels =
            object.get("metadata").and_then(|m| m.get("labels")).and_then(Value::as_object);
        let labels = Labels(labels);
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => labels.get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|l| !vs.iter().any(|v| v == l)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
        })
    }
}

/// An object's labels, looked up where they are (string values only, as the real server
/// stores them).
struct Labels<'a>(Option<&'a serde_json::Map<String, Value>>);

impl Labels<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0?.get(key)?.as_str()
    }

    fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

/// Splits on commas outside parentheses.
fn split_terms(text: &str) -> Vec<&str> {
    let (mut terms, mut depth, mut start) = (Vec::new(), 0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&text[start..]);
    terms
}

fn requirement(term: &str) -> Result<Requirement, String> {
    let set = |rest: &str| -> Result<Vec<String>, String> {
        let inner = rest.trim().strip_prefix('(').and_then(|r| r.strip_suffix(')'));
        let inner = inner.ok_or_else(|| format!("{term:?}: expected a (value, …) set"))?;
        Ok(inner.split(',').map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).collect())
    };
    if let Some((key, rest)) = term.split_once(" notin ") {
        return Ok(Requirement::NotIn(key.trim().to_owned(), set(rest)?));
    }
    if let Some((key, rest)) = term.split_once(" in ") {
        return Ok(Requirement::In(key.trim().to_owned(), set(rest)?));
    }
    if let Some((key, value)) = term.split_once("!=") {
        return Ok(Requirement::NotEquals(key.trim().to_owned(), value.trim().to_owned()));
    }
    if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
        return Ok(Requirement::Equals(key.trim().to_owned(), value.trim().to_owned()));
    }
    if let Some(key) = term.strip_prefix('!') {
        return Ok(Requirement::NotExists(key.trim().to_owned()));
    }
    if term.contains(char::is_whitespace) {
        return Err(format!("{term:?}: unable to parse requirement"));
    }
    Ok(Requirement::Exists(term.to_owned()))
}

/// Whether `object` satisfies a field selector (`metadata.name=x,spec.type!=y`).
pub(crate) fn fields_match(selector: Option<&str>, object: &Value) -> bool {
    let Some(selector) = selector else { return true };
    selector.split(',').filter(|s| !s.is_empty()).all(|term| {
        let (field, want, negate) = match term.split_once("!=") {
            Some((f, v)) => (f, v, true),
            None => match term.split_once('=') {
                Some((f, v)) => (f, v.trim_start_matches('='), false),
                None => return true,
            },
        };
        let path = format!("/{}", field.replace('.', "/"));
        let have = object.pointer(&path).and_then(Value::as_str).unwrap_or_default();
        (have == want) != negate
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labelled(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}})
    }

    #[test]
    fn every_operator_kubectl_sends_is_understood() {
        let web = labelled(json!({"app": "web", "tier": "front"}));
        let db = labelled(json!({"app": "db"}));
        let cases = [
            ("app=web", true, false),
            ("app==web", true, false),
            ("app!=web", false, true),
            ("app in (web, api)", true, false),
            ("app notin (web,api)", false, true),
            ("tier", true, false),
            ("!tier", false, true),
            ("app in (web,db),!tier", false, true),
            ("", true, true),
        ];
        for (text, on_web, on_db) in cases {
            let s = LabelSelector::parse(text).unwrap();
            assert_eq!((s.matches(&web), s.matches(&db)), (on_web, on_db), "{text}");
        }
        assert!(LabelSelector::parse("app in web").is_err());
    }

    #[test]
    fn field_selectors_compare_any_string_field() {
        let svc =
            json!({"metadata": {"name": "a", "namespace": "x"}, "spec": {"type": "LoadBalancer"}});
        assert!(fields_match(Some("metadata.name=a,spec.type=LoadBalancer"), &svc));
        assert!(!fields_match(Some("spec.type!=LoadBalancer"), &svc));
        assert!(fields_match(None, &svc));
    }
}
