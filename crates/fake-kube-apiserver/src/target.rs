//! What a request's path names: the resource, its namespace, the object and its subresource.

use crate::Resource;

/// The parsed path: `/api/v1[/namespaces/{ns}]/{plural}[/{name}[/{sub}]]` or `/apis/{g}/{v}/…`.
pub(crate) struct Target {
    pub(crate) resource: Resource,
    pub(crate) namespace: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) subresource: Option<String>,
}

pub(crate) fn parse_path(path: &str) -> Option<Target> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (api_version, rest) = match parts.as_slice() {
        ["api", version, rest @ ..] => ((*version).to_owned(), rest),
        ["apis", group, version, rest @ ..] => (format!("{group}/{version}"), rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some((*ns).to_owned()), rest),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (plural, None, None),
        [plural, name] => (plural, Some(*name), None),
        [plural, name, sub] => (plural, Some(*name), Some(*sub)),
        _ => return None,
    };
    Some(Target {
        resource: Resource { api_version, plural: (*plural).to_owned() },
        namespace,
        name: name.map(str::to_owned),
        subresource: subresource.map(str::to_owned),
    })
}
