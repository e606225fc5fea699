//! Typed access to an asset's declared parents, and only to those.
//!
//! Reading an undeclared parent is an error, so the engine always sees every edge a `generate`
//! uses (the installer once kept a stale cluster ID because an edge was missing; see STYLE.md d1).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{AssetId, Error, Key, Result};

/// What one asset's `generate` may read.
pub struct Parents<'a> {
    asset: AssetId,
    declared: &'static [AssetId],
    contents: &'a BTreeMap<AssetId, Value>,
    previous: Option<&'a Value>,
    read: RefCell<BTreeSet<AssetId>>,
}

impl<'a> Parents<'a> {
    /// Parents of `asset` drawn from the contents resolved so far.
    pub fn new(
        asset: AssetId,
        declared: &'static [AssetId],
        contents: &'a BTreeMap<AssetId, Value>,
        previous: Option<&'a Value>,
    ) -> Parents<'a> {
        Parents { asset, declared, contents, previous, read: RefCell::default() }
    }

    /// The content of the declared parent `key`, decoded as its type.
    pub fn get<T: DeserializeOwned>(&self, key: &Key<T>) -> Result<T> {
        let id = key.id;
        let Some(parent) = self.declared.iter().copied().find(|d| *d == id) else {
            return Err(Error::UndeclaredParent { asset: self.asset, parent: id });
        };
        self.read.borrow_mut().insert(parent);
        // Decoded straight from the stored tree: no copy of it per read (the install-config is
        // read by most assets).
        let value = self.contents.get(parent).unwrap_or(&Value::Null);
        T::deserialize(value).map_err(|source| Error::ParentContent {
            asset: self.asset,
            parent,
            source,
        })
    }

    /// This asset's content from the previous run, when the state has it and it still decodes.
    /// Assets that generate random values (ids, keys) reuse them from here.
    pub fn previous<T: DeserializeOwned>(&self) -> Option<T> {
        self.previous.and_then(|v| T::deserialize(v).ok())
    }

    /// Declared parents that `generate` never read (a test checks every asset reads them all).
    pub fn unread(&self) -> Vec<AssetId> {
        let read = self.read.borrow();
        self.declared.iter().copied().filter(|d| !read.contains(d)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reading_an_undeclared_parent_is_an_error() {
        let contents = BTreeMap::from([("a", json!(1)), ("b", json!(2))]);
        let parents = Parents::new("c", &["a"], &contents, None);
        assert_eq!(parents.get(&Key::<u32>::new("a")).unwrap(), 1);
        let err = parents.get(&Key::<u32>::new("b")).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"asset "c" read "b", which is not among its declared dependencies"#
        );
    }

    #[test]
    fn unread_lists_declared_parents_that_were_not_read() {
        let contents = BTreeMap::from([("a", json!(1)), ("b", json!(2))]);
        let parents = Parents::new("c", &["a", "b"], &contents, None);
        let _: u32 = parents.get(&Key::new("b")).unwrap();
        assert_eq!(parents.unread(), vec!["a"]);
    }

    #[test]
    fn previous_content_that_no_longer_decodes_is_ignored() {
        let contents = BTreeMap::new();
        let old = json!({"unexpected": true});
        let parents = Parents::new("c", &[], &contents, Some(&old));
        assert_eq!(parents.previous::<String>(), None);
    }
}
