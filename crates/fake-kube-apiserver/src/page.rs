//! List paging as the real server does it: `limit` and the `continue` token of the page before.
//!
//! The real server serves every page from the first page's snapshot; the fake keeps no
//! snapshots, so a later page shows the objects as they are now, after the previous page's last
//! key, and the list keeps the first page's resourceVersion (a watch from it then replays the
//! changes in between, which a reflector applies again harmlessly).

use serde_json::{Map, Value, json};

use crate::Failure;

/// One page of `items` (sorted by namespace and name, as the store keeps them), borrowed, and
/// the list's `metadata`: `resourceVersion`, and `continue` plus `remainingItemCount` when more
/// follow.
/// `items(after)` lists the objects after `after` (namespace, name), or all of them.
pub(crate) fn page<'a, I: Iterator<Item = &'a Value>>(
    items: impl FnOnce(Option<(&str, &str)>) -> I,
    rv: u64,
    limit: Option<&String>,
    token: Option<&String>,
) -> Result<(Vec<&'a Value>, Value), Failure> {
    let limit = limit.and_then(|l| l.parse::<usize>().ok()).filter(|l| *l > 0);
    let (rv, after) = match token.filter(|t| !t.is_empty()) {
        None => (rv, None),
        Some(token) => {
            let mut parts = token.splitn(3, '/');
            let parsed = (parts.next().and_then(|rv| rv.parse().ok()), parts.next(), parts.next());
            let (Some(rv), Some(namespace), Some(name)) = parsed else {
                let message = format!("continue key is not valid: {token:?}");
                return Err(Failure { code: 400, reason: "BadRequest", message });
            };
            (rv, Some((namespace.to_owned(), name.to_owned())))
        }
    };
    // Borrowed: the response is serialized from the store's objects, none is copied.
    let mut later =
        items(after.as_ref().map(|(namespace, name)| (namespace.as_str(), name.as_str())));
    let page: Vec<&Value> = later.by_ref().take(limit.unwrap_or(usize::MAX)).collect();
    let remaining = later.count();
    let mut meta = Map::new();
    meta.insert("resourceVersion".into(), json!(rv.to_string()));
    if remaining == 0 {
        return Ok((page, meta.into()));
    }
    let (namespace, name) = page.last().map(|o| key(o)).unwrap_or_default();
    meta.insert("continue".into(), json!(format!("{rv}/{namespace}/{name}")));
    meta.insert("remainingItemCount".into(), json!(remaining));
    Ok((page, meta.into()))
}

/// Namespace and name: the order the store lists objects in.
fn key(object: &Value) -> (&str, &str) {
    let field = |f: &str| object["metadata"][f].as_str().unwrap_or_default();
    (field("namespace"), field("name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> Value {
        json!({"metadata": {"name": name}})
    }

    #[test]
    fn pages_follow_each_other_and_keep_the_first_resource_version() {
        let all = [named("a"), named("b"), named("c")];
        // As the store does: the objects after the page before.
        let items = |after: Option<(&str, &str)>| {
            let after = after.map(|(ns, name)| (ns.to_owned(), name.to_owned()));
            all.iter().filter(move |o| after.as_ref().is_none_or(|(ns, name)| key(o) > (ns, name)))
        };
        let two = Some("2".to_owned());
        let (first, meta) = page(items, 7, two.as_ref(), None).unwrap();
        assert_eq!(first, [&named("a"), &named("b")]);
        assert_eq!(
            meta,
            json!({"resourceVersion": "7", "continue": "7//b", "remainingItemCount": 1})
        );
        let token = meta["continue"].as_str().map(str::to_owned);
        let (second, meta) = page(items, 9, two.as_ref(), token.as_ref()).unwrap();
        assert_eq!(second, [&named("c")]);
        assert_eq!(meta, json!({"resourceVersion": "7"}));
        let bad = Some("x".to_owned());
        assert_eq!(page(items, 9, None, bad.as_ref()).unwrap_err().code, 400);
    }
}
