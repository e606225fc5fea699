//! The infrastructure ID: `<cluster name, sanitized, ≤ 21 chars>-<5 random chars>`, made once.
//!
//! It names cloud resources, so it must not change between runs: it is kept in the state and
//! reused while the cluster name stays the same. `--infra-id` pins it.

use serde::{Deserialize, Serialize};

use super::install_config;
use crate::graph::{Asset, AssetError, AssetId, Key, Output, Parents};
use crate::installconfig::InstallConfig;

/// Asset id.
pub const ID: AssetId = "cluster-id";
/// [`ID`] with its content type, for `Parents::get`.
pub const KEY: Key<ClusterId> = Key::new(ID);

/// The installer's limit: 27 characters in all, so 21 for the name part.
const MAX_LEN: usize = 27;
const RANDOM_LEN: usize = 5;
/// The installer's alphabet for random suffixes (no vowels: no accidental words).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The asset's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterId {
    /// The cluster name the ID was made for.
    pub name: String,
    /// The infrastructure ID.
    #[serde(rename = "infraID")]
    pub infra_id: String,
}

/// Generates or reuses the infrastructure ID.
#[derive(Debug)]
pub struct ClusterIdAsset {
    pinned: Option<String>,
}

impl ClusterIdAsset {
    /// `pinned` is `--infra-id`, already validated by the command line.
    pub fn new(pinned: Option<String>) -> ClusterIdAsset {
        ClusterIdAsset { pinned }
    }
}

impl Asset for ClusterIdAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Cluster ID"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[install_config::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let config: InstallConfig = parents.get(&install_config::KEY)?;
        let name = config.metadata.name;
        let infra_id = match (&self.pinned, parents.previous::<ClusterId>()) {
            (Some(pinned), _) => pinned.clone(),
            (None, Some(previous)) if previous.name == name => previous.infra_id,
            (None, _) => infra_id(&name, &random_suffix()?),
        };
        Output::new(&ClusterId { name, infra_id })
    }
}

/// The installer's `generateInfraID`: non-`[a-z0-9-]` → `-`, runs of `-` squeezed, cut to 21
/// characters, trailing `-` trimmed, then `-` and the suffix.
pub fn infra_id(name: &str, suffix: &str) -> String {
    let mut base = String::with_capacity(name.len());
    for c in name.chars().map(|c| c.to_ascii_lowercase()) {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() { c } else { '-' };
        if !(c == '-' && base.ends_with('-')) {
            base.push(c);
        }
    }
    base.truncate(MAX_LEN - RANDOM_LEN - 1);
    format!("{}-{suffix}", base.trim_end_matches('-'))
}

fn random_suffix() -> Result<String, AssetError> {
    let mut bytes = [0u8; RANDOM_LEN];
    getrandom::fill(&mut bytes)
        .map_err(|e| format!("no random source for the infrastructure ID: {e}"))?;
    // 256 % 27 leaves a slight bias; the suffix only needs to be unlikely to collide.
    Ok(bytes.iter().map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infra_id_sanitizes_and_cuts_the_name_as_the_installer_does() {
        for (name, want) in [
            ("mycluster", "mycluster-abcde"),
            ("my.cluster.example", "my-cluster-example-abcde"),
            ("a--b__c", "a-b-c-abcde"),
            ("a-very-long-cluster-name-indeed", "a-very-long-cluster-n-abcde"),
            ("abcdefghijklmnopqrst-uvw", "abcdefghijklmnopqrst-abcde"),
            ("UPPER", "upper-abcde"),
        ] {
            assert_eq!(infra_id(name, "abcde"), want, "{name}");
            assert!(infra_id(name, "abcde").len() <= MAX_LEN);
        }
    }

    #[test]
    fn random_suffix_uses_the_installer_alphabet() {
        let s = random_suffix().unwrap();
        assert_eq!(s.len(), RANDOM_LEN);
        assert!(s.bytes().all(|b| ALPHABET.contains(&b)), "{s}");
    }
}
