//! clouds.yaml model: typed keys the generator reads, every other key kept; secrets never printed.
//!
//! Known keys are read as the exact text written (`password: 0x1F` stays `"0x1F"`), which is
//! why the `Deserialize` impls are hand-written: serde's `flatten` buffers values first and
//! would turn such scalars into numbers. Unknown keys are kept as `serde_json::Value` and
//! written back, so a selected entry can be re-emitted whole.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// An error combining clouds.yaml documents.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The merged document no longer fits the clouds.yaml shape (say, `auth` became a string).
    #[error("merged clouds.yaml has an invalid shape")]
    Shape(#[source] serde_json::Error),
}

/// Result alias for this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Declares a clouds.yaml section: the struct (known keys + `other`), its field-by-field
/// `Deserialize` and its key list.
macro_rules! section {
    (
        $(#[$meta:meta])*
        pub struct $name:ident { $($(#[$fmeta:meta])* $field:ident : $ty:ty,)+ }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Default, PartialEq, Serialize)]
        pub struct $name {
            $($(#[$fmeta])* #[serde(skip_serializing_if = "Skip::skip")] pub $field: $ty,)+
            /// Every other key, kept verbatim.
            #[serde(flatten)]
            pub other: BTreeMap<String, Value>,
        }

        impl $name {
            /// The keys this type reads itself.
            pub const KEYS: &'static [&'static str] = &[$(stringify!($field)),+];
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
                struct SectionVisitor;
                impl<'de> Visitor<'de> for SectionVisitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(concat!("a clouds.yaml ", stringify!($name), " mapping"))
                    }
                    fn visit_unit<E: de::Error>(self) -> std::result::Result<$name, E> {
                        Ok($name::default())
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<$name, A::Error> {
                        let mut section = $name::default();
                        while let Some(key) = map.next_key::<String>()? {
                            match key.as_str() {
                                $(stringify!($field) => section.$field = map.next_value()?,)+
                                _ => {
                                    let value = map.next_value()?;
                                    section.other.insert(key, value);
                                }
                            }
                        }
                        Ok(section)
                    }
                }
                deserializer.deserialize_map(SectionVisitor)
            }
        }
    };
}

/// Whether a field is unset and left out when writing.
trait Skip {
    fn skip(&self) -> bool;
}

impl<T> Skip for Option<T> {
    fn skip(&self) -> bool {
        self.is_none()
    }
}

impl Skip for Auth {
    fn skip(&self) -> bool {
        *self == Self::default()
    }
}

section! {
    /// `clouds.<name>.auth`: where and how to authenticate.
    pub struct Auth {
        /// Keystone URL.
        auth_url: Option<String>,
        /// User name.
        username: Option<String>,
        /// Password (password auth); redacted in `Debug`.
        password: Option<String>,
        /// User ID.
        user_id: Option<String>,
        /// Project ID.
        project_id: Option<String>,
        /// Project name.
        project_name: Option<String>,
        /// Domain ID for user and project.
        domain_id: Option<String>,
        /// Domain name for user and project.
        domain_name: Option<String>,
        /// The user's domain ID.
        user_domain_id: Option<String>,
        /// The user's domain name.
        user_domain_name: Option<String>,
        /// The project's domain ID.
        project_domain_id: Option<String>,
        /// The project's domain name.
        project_domain_name: Option<String>,
        /// Application credential ID.
        application_credential_id: Option<String>,
        /// Application credential name (with `user_id` or `username`).
        application_credential_name: Option<String>,
        /// Application credential secret; redacted in `Debug`.
        application_credential_secret: Option<String>,
        /// A Keystone token (`v3token`); redacted in `Debug`.
        token: Option<String>,
    }
}

section! {
    /// One `clouds.<name>` entry.
    pub struct CloudEntry {
        /// Credentials.
        auth: Auth,
        /// `password`, `v3password`, `v3applicationcredential`, `v3token`, …
        auth_type: Option<String>,
        /// The region.
        region_name: Option<String>,
        /// Path to a CA bundle for TLS to the cloud.
        cacert: Option<String>,
        /// Path to a client certificate.
        cert: Option<String>,
        /// Path to the client certificate's key.
        key: Option<String>,
        /// `public`, `internal` or `admin`.
        interface: Option<String>,
        /// Usually `3`.
        identity_api_version: Option<String>,
        /// `false` disables TLS verification.
        verify: Option<bool>,
    }
}

/// A whole clouds.yaml (or secure.yaml) document.
#[derive(Clone, Default, PartialEq, Serialize)]
pub struct CloudsFile {
    /// The clouds by name.
    pub clouds: BTreeMap<String, CloudEntry>,
    /// Every other top-level key, kept verbatim.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

impl<'de> Deserialize<'de> for CloudsFile {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct FileVisitor;
        impl<'de> Visitor<'de> for FileVisitor {
            type Value = CloudsFile;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a clouds.yaml mapping")
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<CloudsFile, E> {
                Ok(CloudsFile::default())
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<CloudsFile, A::Error> {
                let mut file = CloudsFile::default();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "clouds" {
                        let clouds: Option<BTreeMap<String, CloudEntry>> = map.next_value()?;
                        file.clouds = clouds.unwrap_or_default();
                    } else {
                        let value = map.next_value()?;
                        file.other.insert(key, value);
                    }
                }
                Ok(file)
            }
        }
        deserializer.deserialize_map(FileVisitor)
    }
}

impl CloudsFile {
    /// The cloud names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.clouds.keys().cloned().collect()
    }

    /// This file with `overlay` (a secure.yaml) deep-merged over it, the overlay winning.
    pub fn merged_with(&self, overlay: &Self) -> Result<Self> {
        let mut base = serde_json::to_value(self).map_err(Error::Shape)?;
        merge(&mut base, serde_json::to_value(overlay).map_err(Error::Shape)?);
        serde_json::from_value(base).map_err(Error::Shape)
    }
}

/// Deep merge as openstacksdk merges secure.yaml: objects merge key by key, anything else in
/// `overlay` replaces what `base` had.
pub fn merge(base: &mut Value, overlay: Value) {
    match (base, overlay) {
        (Value::Object(base), Value::Object(overlay)) => {
            for (key, value) in overlay {
                match base.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, overlay) => *base = overlay,
    }
}

/// Prints `Some(<redacted>)` for a set secret.
struct Redacted<'a>(&'a Option<String>);

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(_) => f.write_str("Some(<redacted>)"),
            None => f.write_str("None"),
        }
    }
}

/// Prints the keys of an unknown-key map only: any of them may hold a secret.
struct KeysOnly<'a>(&'a BTreeMap<String, Value>);

impl fmt::Debug for KeysOnly<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.keys().map(|key| (key, Redact))).finish()
    }
}

struct Redact;

impl fmt::Debug for Redact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth")
            .field("auth_url", &self.auth_url)
            .field("username", &self.username)
            .field("password", &Redacted(&self.password))
            .field("user_id", &self.user_id)
            .field("project_id", &self.project_id)
            .field("project_name", &self.project_name)
            .field("domain_id", &self.domain_id)
            .field("domain_name", &self.domain_name)
            .field("user_domain_id", &self.user_domain_id)
            .field("user_domain_name", &self.user_domain_name)
            .field("project_domain_id", &self.project_domain_id)
            .field("project_domain_name", &self.project_domain_name)
            .field("application_credential_id", &self.application_credential_id)
            .field("application_credential_name", &self.application_credential_name)
            .field("application_credential_secret", &Redacted(&self.application_credential_secret))
            .field("token", &Redacted(&self.token))
            .field("other", &KeysOnly(&self.other))
            .finish()
    }
}

impl fmt::Debug for CloudEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloudEntry")
            .field("auth", &self.auth)
            .field("auth_type", &self.auth_type)
            .field("region_name", &self.region_name)
            .field("cacert", &self.cacert)
            .field("cert", &self.cert)
            .field("key", &self.key)
            .field("interface", &self.interface)
            .field("identity_api_version", &self.identity_api_version)
            .field("verify", &self.verify)
            .field("other", &KeysOnly(&self.other))
            .finish()
    }
}

impl fmt::Debug for CloudsFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloudsFile")
            .field("clouds", &self.clouds)
            .field("other", &KeysOnly(&self.other))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> CloudsFile {
        serde_saphyr::from_str(text).unwrap()
    }

    const FILE: &str = "\
clouds:
  mycloud:
    auth:
      auth_url: https://keystone:5000/v3
      username: admin
      password: 0x1F
      project_name: admin
      passcode: '123'
    region_name: RegionOne
    verify: false
    regions: [RegionOne, RegionTwo]
    block_storage_api_version: 3
public-clouds: {}
";

    #[test]
    fn known_keys_keep_their_exact_text() {
        let file = parse(FILE);
        let entry = &file.clouds["mycloud"];
        assert_eq!(entry.auth.password.as_deref(), Some("0x1F"));
        assert_eq!(entry.verify, Some(false));
        assert_eq!(entry.region_name.as_deref(), Some("RegionOne"));
    }

    #[test]
    fn unknown_keys_survive_a_round_trip() {
        let file = parse(FILE);
        let json = serde_json::to_value(&file).unwrap();
        let entry = &json["clouds"]["mycloud"];
        assert_eq!(entry["regions"], serde_json::json!(["RegionOne", "RegionTwo"]));
        assert_eq!(entry["block_storage_api_version"], 3);
        assert_eq!(entry["auth"]["passcode"], "123");
        assert_eq!(entry["auth"]["password"], "0x1F");
        assert!(json["public-clouds"].is_object());
        let back: CloudsFile = serde_json::from_value(json).unwrap();
        assert_eq!(back, file);
    }

    #[test]
    fn debug_never_shows_secrets() {
        let mut file = parse(FILE);
        let auth = &mut file.clouds.get_mut("mycloud").unwrap().auth;
        auth.application_credential_secret = Some("s3cr3t-app".into());
        auth.token = Some("tok-3n".into());
        let debug = format!("{file:?} {file:#?}");
        for secret in ["0x1F", "s3cr3t-app", "tok-3n", "123"] {
            assert!(!debug.contains(secret), "{secret} leaked: {debug}");
        }
        assert!(debug.contains("<redacted>") && debug.contains("passcode"));
    }

    #[test]
    fn secure_yaml_wins_in_a_deep_merge() {
        let base = parse(FILE);
        let secure = parse(
            "clouds:\n  mycloud:\n    auth:\n      password: new\n  other:\n    region_name: R2\n",
        );
        let merged = base.merged_with(&secure).unwrap();
        let entry = &merged.clouds["mycloud"];
        assert_eq!(entry.auth.password.as_deref(), Some("new"));
        assert_eq!(entry.auth.username.as_deref(), Some("admin"));
        assert_eq!(merged.names(), ["mycloud", "other"]);
    }

    #[test]
    fn merge_replaces_non_objects() {
        let mut base = serde_json::json!({"a": {"b": 1, "c": [1]}, "d": 1});
        merge(&mut base, serde_json::json!({"a": {"c": [2], "e": 3}, "d": {"x": 1}}));
        assert_eq!(base, serde_json::json!({"a": {"b": 1, "c": [2], "e": 3}, "d": {"x": 1}}));
    }
}
