//! `create manifests` end to end: golden output, reruns, edits, failures, modes, secrets.

use std::os::unix::fs::PermissionsExt as _;
use std::time::SystemTime;

use crate::assert_golden;
use testkit::create::CreateManifests;

use crate::support::{Test, tree};
const INFRA: &str = "manifests/cluster-infrastructure-02-config.yml";
const STATE: &str = ".ccm-assets-state.json";

fn openstack() -> Test {
    Test::new().example("openstack").create(&CreateManifests::offline())
}

fn mtimes(t: &Test) -> Vec<(String, SystemTime)> {
    tree(&t.dir())
        .into_iter()
        .map(|(p, _)| {
            let m = std::fs::metadata(t.dir().join(&p)).unwrap().modified().unwrap();
            (p, m)
        })
        .collect()
}

#[test]
fn create_logs_one_line_per_file_written() {
    let t = openstack();
    let run = t.expect(0);
    assert_golden!(
        "openstack-create-stderr",
        run.stderr.replace(&t.dir().display().to_string(), "DIR")
    );
}

#[test]
fn inputs_are_never_modified() {
    let t = openstack();
    let example = crate::support::repo().join("assets/examples/openstack");
    t.expect(0);
    for name in ["install-config.yaml", "clouds.yaml"] {
        assert_eq!(t.read(name), std::fs::read_to_string(example.join(name)).unwrap(), "{name}");
    }
}

#[test]
fn same_inputs_give_byte_identical_output_in_any_directory() {
    let a = openstack();
    let b = openstack();
    a.expect(0);
    b.expect(0);
    // Keys and certificates are minted per directory; everything else must be identical.
    let files = |t: &Test| -> Vec<(String, String)> {
        tree(&t.dir())
            .into_iter()
            .filter(|(p, _)| p != STATE && !p.starts_with("bootstrap/secrets/"))
            .map(|(p, bytes)| (p, String::from_utf8_lossy(&bytes).into_owned()))
            .collect()
    };
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(fa.len(), fb.len());
    for ((pa, ta), (pb, tb)) in fa.iter().zip(&fb) {
        assert_eq!((pa, ta), (pb, tb), "{pa} differs");
    }
}

#[test]
fn rerun_with_unchanged_inputs_rewrites_nothing() {
    let t = openstack();
    t.expect(0);
    let before = mtimes(&t);
    std::thread::sleep(std::time::Duration::from_millis(20)); // mtime resolution, not a timing test
    let run = t.expect(0);
    assert_eq!(mtimes(&t), before);
    assert!(run.stderr.ends_with("are up to date\n"), "{}", run.stderr);
    assert!(!run.stderr.contains("Wrote"), "{}", run.stderr);
}

#[test]
fn generated_infra_id_is_made_once_and_kept() {
    let t = Test::new().example("openstack").create(&CreateManifests::offline().random_infra_id());
    t.expect(0);
    let first = t.read(INFRA);
    let line = first.lines().find(|l| l.contains("infrastructureName:")).unwrap().to_owned();
    let id = line.trim().trim_start_matches("infrastructureName: ");
    assert_eq!(id.len(), "demo-".len() + 5, "{id}");
    assert!(id.starts_with("demo-"), "{id}");
    assert!(id[5..].bytes().all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)), "{id}");
    t.expect(0);
    assert_eq!(t.read(INFRA), first);
}

#[test]
fn user_edit_is_kept_when_inputs_are_unchanged() {
    let t = openstack();
    t.expect(0);
    let edited = t.read(INFRA).replace("cpuPartitioning: None", "cpuPartitioning: AllNodes");
    std::fs::write(t.dir().join(INFRA), &edited).unwrap();
    let run = t.expect(0);
    assert!(run.stderr.contains(&format!("INFO Kept user edits to {INFRA}\n")), "{}", run.stderr);
    assert_eq!(t.read(INFRA), edited);
}

#[test]
fn changed_inputs_regenerate_dependents_and_name_discarded_edits() {
    let t = openstack();
    t.expect(0);
    std::fs::write(t.dir().join(INFRA), "edited by hand\n").unwrap();
    let config =
        t.read("install-config.yaml").replace("baseDomain: example.com", "baseDomain: example.org");
    std::fs::write(t.dir().join("install-config.yaml"), config).unwrap();
    let run = t.expect(0);
    assert!(
        run.stderr
            .contains(&format!("WARNING Discarded user edits to {INFRA}: its inputs changed\n")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("INFO Wrote manifests/cluster-config.yaml\n"), "{}", run.stderr);
    assert!(t.read(INFRA).contains("apiServerURL: https://api.demo.example.org:6443"));
}

#[test]
fn a_failed_run_leaves_the_directory_unchanged() {
    let t = openstack();
    t.expect(0);
    let config =
        t.read("install-config.yaml").replace("baseDomain: example.com", "baseDomain: -bad-");
    std::fs::write(t.dir().join("install-config.yaml"), &config).unwrap();
    let before = tree(&t.dir());
    let times = mtimes(&t);
    let run = t.expect(3);
    assert!(
        run.stderr.contains("install-config.yaml: baseDomain: Invalid value: \"-bad-\""),
        "{}",
        run.stderr
    );
    assert_eq!(tree(&t.dir()), before);
    assert_eq!(mtimes(&t), times);
}

#[test]
fn a_fresh_directory_stays_empty_when_the_cloud_is_missing() {
    let t = openstack().env("OS_CLIENT_CONFIG_FILE", "/nonexistent/clouds.yaml");
    std::fs::remove_file(t.dir().join("clouds.yaml")).unwrap();
    let before = tree(&t.dir());
    let run = t.expect(3);
    assert!(run.stderr.contains("clouds.yaml"), "{}", run.stderr);
    assert_eq!(tree(&t.dir()), before);
}

#[test]
fn state_is_private_and_manifests_are_world_readable() {
    let t = openstack();
    t.expect(0);
    let mode =
        |rel: &str| std::fs::metadata(t.dir().join(rel)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(STATE), 0o600);
    assert_eq!(mode(INFRA), 0o644);
    assert_eq!(mode("manifests/cluster-config.yaml"), 0o644);
}

#[test]
fn secrets_stay_in_private_files_and_out_of_the_logs() {
    let run = CreateManifests::offline().flags(&["--log-level", "debug"]);
    let t = Test::new().example("openstack").create(&run);
    let run = t.expect(0);
    for secret in ["example-secret-not-real", "ZXhhbXBsZTpleGFtcGxl"] {
        assert!(!run.stderr.contains(secret), "{secret} in logs:\n{}", run.stderr);
        for (path, bytes) in tree(&t.dir()) {
            let mode = std::fs::metadata(t.dir().join(&path)).unwrap().permissions().mode() & 0o777;
            let text = String::from_utf8_lossy(&bytes);
            if !["clouds.yaml", "install-config.yaml"].contains(&path.as_str()) && mode != 0o600 {
                assert!(!text.contains(secret), "{secret} in {path} ({mode:o})");
            }
        }
    }
    let private =
        ["openshift/99_cloud-creds-secret.yaml", "manifests/ccm/11-cloud-credentials.yaml"];
    for path in private {
        let mode = std::fs::metadata(t.dir().join(path)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{path}");
    }
}

#[test]
fn a_symlink_inside_dir_that_leads_out_is_refused_and_nothing_is_written() {
    let outside = tempfile::tempdir().unwrap();
    let t = Test::new().example("openstack").create(&CreateManifests::offline());
    std::os::unix::fs::symlink(outside.path(), t.dir().join("manifests")).unwrap();
    let before = tree(&t.dir());
    let run = t.expect(1);
    let message = format!("manifests is a symbolic link to {}", outside.path().display());
    assert!(run.stderr.contains("refusing to write manifests/"), "{}", run.stderr);
    assert!(run.stderr.contains(&message), "{}", run.stderr);
    assert_eq!(tree(&t.dir()), before, "the directory changed");
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none(), "wrote outside DIR");
}

#[test]
fn render_refuses_a_dest_dir_whose_subdirectory_leads_out() {
    let outside = tempfile::tempdir().unwrap();
    let t = Test::new().example("openstack").create(&CreateManifests::offline());
    t.expect(0);
    let out = t.dir().join("ccm-bootstrap");
    std::fs::create_dir(&out).unwrap();
    std::os::unix::fs::symlink(outside.path(), out.join("configs")).unwrap();
    let args = ["render", "--asset-dir", "{dir}", "--dest-dir", "{dir}/ccm-bootstrap"];
    let before = tree(&out);
    let t = t.args(&args);
    let run = t.expect(1);
    assert!(run.stderr.contains("refusing to write configs/cloud.conf"), "{}", run.stderr);
    assert_eq!(tree(&out), before, "render wrote something");
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none(), "wrote outside");
}
