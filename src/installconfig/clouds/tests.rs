//! clouds.yaml lookup against files in a temp dir (never the real `$HOME`).

use std::fs;
use std::path::{Path, PathBuf};

use super::*;

const CLOUDS: &str = "\
clouds:
  demo:
    auth:
      auth_url: https://keystone.example.com:5000/v3
      username: demo
      password: hunter2
      project_name: demo
      user_domain_name: Default
    region_name: RegionOne
    regions: [RegionOne]
    api_timeout: 30
  zeta: {}
  alpha: {}
";

struct Tree {
    tmp: tempfile::TempDir,
}

impl Tree {
    fn new() -> Self {
        Self { tmp: tempfile::tempdir().unwrap() }
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.tmp.path().join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    fn env(&self, client_config_file: Option<&str>) -> SearchEnv {
        SearchEnv {
            client_config_file: client_config_file.map(|rel| self.tmp.path().join(rel)),
            cwd: self.tmp.path().join("cwd"),
            home: Some(self.tmp.path().join("home")),
        }
    }

    fn root(&self) -> &Path {
        self.tmp.path()
    }
}

fn cloud_named(name: &str) -> String {
    format!("clouds:\n  {name}:\n    region_name: from-{name}\n")
}

#[test]
fn search_order_is_env_file_then_cwd_then_home_then_etc() {
    let tree = Tree::new();
    let paths = search_paths(&tree.env(Some("custom/my-clouds.yaml")));
    assert_eq!(
        paths,
        [
            tree.root().join("custom/my-clouds.yaml"),
            tree.root().join("cwd/clouds.yaml"),
            tree.root().join("home/.config/openstack/clouds.yaml"),
            PathBuf::from("/etc/openstack/clouds.yaml"),
        ]
    );
    let without = search_paths(&SearchEnv { cwd: "/w".into(), ..SearchEnv::default() });
    assert_eq!(
        without,
        [PathBuf::from("/w/clouds.yaml"), PathBuf::from("/etc/openstack/clouds.yaml")]
    );
}

#[test]
fn the_first_existing_file_wins() {
    let tree = Tree::new();
    tree.write("home/.config/openstack/clouds.yaml", &cloud_named("demo"));
    let cwd = tree.write("cwd/clouds.yaml", &cloud_named("demo"));
    let paths = search_paths(&tree.env(Some("missing.yaml")));
    let selected = load(&paths, "demo").unwrap();
    assert_eq!(selected.file, cwd);
    assert_eq!(selected.entry.region_name.as_deref(), Some("from-demo"));

    let env_file = tree.write("custom.yaml", "clouds:\n  demo:\n    region_name: from-env\n");
    let selected = load(&search_paths(&tree.env(Some("custom.yaml"))), "demo").unwrap();
    assert_eq!(selected.file, env_file);
    assert_eq!(selected.entry.region_name.as_deref(), Some("from-env"));
}

#[test]
fn no_file_lists_every_searched_path() {
    let tree = Tree::new();
    let paths = vec![tree.root().join("a/clouds.yaml"), tree.root().join("b/clouds.yaml")];
    let err = load(&paths, "demo").unwrap_err();
    assert!(err.is_invalid_input());
    assert_eq!(
        err.to_string(),
        format!("no clouds.yaml found (searched: {}, {})", paths[0].display(), paths[1].display())
    );
}

#[test]
fn an_unknown_cloud_names_the_clouds_found_sorted() {
    let tree = Tree::new();
    let file = tree.write("cwd/clouds.yaml", CLOUDS);
    let err = load(std::slice::from_ref(&file), "x").unwrap_err();
    assert!(err.is_invalid_input());
    assert_eq!(
        err.to_string(),
        format!(
            "{}: cloud \"x\" does not exist in clouds.yaml (found: alpha, demo, zeta)",
            file.display()
        )
    );
    let empty = tree.write("empty/clouds.yaml", "");
    let err = load(std::slice::from_ref(&empty), "x").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: cloud \"x\" does not exist in clouds.yaml (no clouds defined)",
            empty.display()
        )
    );
}

#[test]
fn secure_yaml_from_the_first_search_dir_that_has_one_is_merged_over() {
    let tree = Tree::new();
    let file = tree.write("cwd/clouds.yaml", CLOUDS);
    tree.write(
        "home/.config/openstack/secure.yaml",
        "clouds:\n  demo:\n    auth:\n      password: from-home\n",
    );
    let paths = search_paths(&tree.env(None));
    let selected = load(&paths, "demo").unwrap();
    assert_eq!(selected.file, file);
    assert_eq!(selected.secure_file, Some(tree.root().join("home/.config/openstack/secure.yaml")));
    assert_eq!(selected.entry.auth.password.as_deref(), Some("from-home"));
    assert_eq!(selected.entry.auth.username.as_deref(), Some("demo"));

    let cwd_secure =
        tree.write("cwd/secure.yaml", "clouds:\n  demo:\n    auth:\n      password: from-cwd\n");
    let selected = load(&paths, "demo").unwrap();
    assert_eq!(selected.secure_file, Some(cwd_secure));
    assert_eq!(selected.entry.auth.password.as_deref(), Some("from-cwd"));
}

#[test]
fn unknown_keys_of_the_entry_are_kept() {
    let tree = Tree::new();
    let file = tree.write("cwd/clouds.yaml", CLOUDS);
    let selected = load(&[file], "demo").unwrap();
    let json = serde_json::to_value(&selected.entry).unwrap();
    assert_eq!(json["regions"], serde_json::json!(["RegionOne"]));
    assert_eq!(json["api_timeout"], 30);
    assert_eq!(json["auth"]["user_domain_name"], "Default");
}

#[test]
fn syntax_errors_name_the_file_line_and_column() {
    let tree = Tree::new();
    let file = tree.write("cwd/clouds.yaml", "clouds:\n  demo:\n    auth: [\n");
    let err = load(std::slice::from_ref(&file), "demo").unwrap_err();
    assert!(err.is_invalid_input());
    let text = err.to_string();
    assert!(text.starts_with(&format!("{}:", file.display())), "{text}");
    assert!(matches!(err, Error::Syntax { line: 3.., .. }), "{text}");
}

#[test]
fn debug_output_never_contains_the_password() {
    let tree = Tree::new();
    let file = tree.write("cwd/clouds.yaml", CLOUDS);
    let selected = load(&[file], "demo").unwrap();
    let debug = format!("{selected:?}");
    assert!(!debug.contains("hunter2"), "{debug}");
    assert!(debug.contains("<redacted>"), "{debug}");
}
