//! `.ccm-assets-state.json`: per asset, its content and the sha256 of each file it generated.
//!
//! The file is versioned and keyed by asset id. A state the engine cannot read (corrupt, or
//! written by a newer version) is never something the user must fix: it is reported and treated
//! as empty, so existing files are then handled as files ccm-assets did not write.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The state file's name inside the asset directory.
pub const FILE_NAME: &str = ".ccm-assets-state.json";

/// The format version written by this build.
pub const VERSION: u32 = 1;

/// The persisted state of one asset directory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// Format version.
    pub version: u32,
    /// Per asset id.
    pub assets: BTreeMap<String, AssetState>,
}

/// What the last run generated for one asset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AssetState {
    /// The content dependents read (ids and keys generated once live here).
    pub content: Value,
    /// Path → sha256 (hex) of the bytes generated for it (not of a user's later edit).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

/// How loading went.
#[derive(Debug)]
pub enum Loaded {
    /// No state file: a fresh directory.
    Missing,
    /// A usable state.
    Found(State),
    /// A state file this build cannot use, and why; treated as empty.
    Unusable(String),
}

/// Reads the state of `dir`.
pub fn load(dir: &Path) -> std::io::Result<Loaded> {
    let path = dir.join(FILE_NAME);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::Missing),
        Err(e) => return Err(e),
    };
    Ok(match serde_json::from_slice::<State>(&bytes) {
        Ok(state) if state.version == VERSION => Loaded::Found(state),
        Ok(state) => Loaded::Unusable(format!(
            "format version {} is not the supported version {VERSION}",
            state.version
        )),
        Err(e) => Loaded::Unusable(e.to_string()),
    })
}

impl State {
    /// An empty state of the current version.
    pub fn new() -> State {
        State { version: VERSION, assets: BTreeMap::new() }
    }

    /// The bytes to write: pretty JSON with sorted keys and a trailing newline (deterministic).
    pub fn to_bytes(&self) -> serde_json::Result<Vec<u8>> {
        let mut bytes = serde_json::to_vec_pretty(self)?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}

/// Hex sha256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_and_is_deterministic() {
        let mut state = State::new();
        state.assets.insert(
            "b".into(),
            AssetState { content: serde_json::json!({"z": 1, "a": 2}), files: BTreeMap::new() },
        );
        state.assets.insert("a".into(), AssetState::default());
        let bytes = state.to_bytes().unwrap();
        assert_eq!(serde_json::from_slice::<State>(&bytes).unwrap(), state);
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.find("\"a\"").unwrap() < text.find("\"b\"").unwrap(), "{text}");
    }

    #[test]
    fn a_corrupt_or_future_state_is_unusable_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(load(dir.path()).unwrap(), Loaded::Missing));
        std::fs::write(dir.path().join(FILE_NAME), "{not json").unwrap();
        assert!(matches!(load(dir.path()).unwrap(), Loaded::Unusable(_)));
        std::fs::write(dir.path().join(FILE_NAME), r#"{"version": 99, "assets": {}}"#).unwrap();
        let Loaded::Unusable(why) = load(dir.path()).unwrap() else { panic!("usable") };
        assert_eq!(why, "format version 99 is not the supported version 1");
    }

    #[test]
    fn sha256_is_hex() {
        assert_eq!(
            sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
