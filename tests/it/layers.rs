//! The generator's layers point one way (README: Layout): `cli` uses `create`, `create` uses
//! `assets`, and nothing below reaches back up; a platform module does not borrow another
//! platform's helpers (shared ones live in `src/assets/` itself). Read from the sources, so a
//! new `use crate::create::...` in an asset fails here, naming the file and line.

use std::path::{Path, PathBuf};

const PLATFORMS: &[&str] =
    &["aws", "azure", "gcp", "ibmcloud", "none", "nutanix", "openstack", "powervs", "vsphere"];

/// PowerVS is IBM Cloud's: the installer writes its cloud config with IBM Cloud's writer and
/// resolves its account through IBM Cloud's IAM, and so do we.
const FAMILY: &[(&str, &str)] = &[("powervs", "ibmcloud")];

fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// `(file:line, line)` of every line in `files` that names one of `paths`.
fn uses(files: &[PathBuf], paths: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).expect("a source file reads");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if paths.iter().any(|p| code.contains(p.as_str())) {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

fn src() -> PathBuf {
    testkit::repo().join("src")
}

#[test]
fn nothing_below_create_uses_create_or_cli() {
    let below: Vec<PathBuf> = ["assets", "graph", "installconfig"]
        .iter()
        .flat_map(|d| sources(&src().join(d)))
        .chain(["files.rs", "render.rs", "templates.rs"].iter().map(|f| src().join(f)))
        .collect();
    assert!(below.len() > 50, "the scan found the sources ({} files)", below.len());
    let up = ["crate::create", "crate::cli"].map(String::from);
    let found = uses(&below, &up);
    assert!(found.is_empty(), "a lower layer reaches up:\n{}", found.join("\n"));
    let found = uses(&sources(&src().join("create")), &["crate::cli".to_owned()]);
    assert!(found.is_empty(), "create reaches up into cli:\n{}", found.join("\n"));
}

#[test]
fn platforms_do_not_borrow_each_other() {
    let assets = src().join("assets");
    let mut found = Vec::new();
    for platform in PLATFORMS {
        let (dir, single) = (assets.join(platform), assets.join(format!("{platform}.rs")));
        let files = if dir.is_dir() { sources(&dir) } else { vec![single] };
        assert!(!files.is_empty(), "no sources for {platform}");
        let others: Vec<String> = PLATFORMS
            .iter()
            .filter(|o| *o != platform && !FAMILY.contains(&(platform, o)))
            .flat_map(|o| {
                [format!("super::{o}::"), format!("assets::{o}::"), format!("super::{o};")]
            })
            .collect();
        found.extend(uses(&files, &others));
    }
    assert!(found.is_empty(), "a platform borrows another's helpers:\n{}", found.join("\n"));
}
