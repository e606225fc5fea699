//! `create manifests --leader-migration` (issue 26): the golden files, the flag off changing
//! nothing, a toggle on a rerun touching only what depends on it, edits, and other platforms.

use std::collections::BTreeSet;
use std::time::SystemTime;

use testkit::create::CreateManifests;

use crate::assert_golden;
use crate::support::{Test, tree};

const FLAG: &str = "--leader-migration";
const DEPLOYMENT: &str = "manifests/ccm/20-deployment.yaml";
const CONFIG_MAP: &str = "manifests/ccm/12-leader-migration-config.yaml";
const STATE: &str = ".ccm-assets-state.json";

/// What the flag adds, sorted.
const NEW: [&str; 7] = [
    "leader-migration/cloud-controller-manager.yaml",
    "leader-migration/kube-controller-manager.yaml",
    CONFIG_MAP,
    "manifests/ccm/13-leader-migration-role.yaml",
    "manifests/ccm/14-leader-migration-rolebinding.yaml",
    "manifests/ccm/15-leader-election-role.yaml",
    "manifests/ccm/16-leader-election-rolebinding.yaml",
];

fn openstack(flags: &[&str]) -> Test {
    Test::new().example("openstack").create(&CreateManifests::offline().flags(flags))
}

/// Every file with its bytes and mtime, the state left out.
fn snapshot(t: &Test) -> Vec<(String, Vec<u8>, SystemTime)> {
    tree(&t.dir())
        .into_iter()
        .filter(|(path, _)| path != STATE)
        .map(|(path, bytes)| {
            let mtime = std::fs::metadata(t.dir().join(&path)).unwrap().modified().unwrap();
            (path, bytes, mtime)
        })
        .collect()
}

/// The files a run logged as written.
fn written(stderr: &str) -> BTreeSet<&str> {
    stderr.lines().filter_map(|l| l.strip_prefix("INFO Wrote ")).collect()
}

#[test]
fn leader_migration_outputs_match_the_golden_file() {
    let t = openstack(&[FLAG]);
    t.expect(0);
    let text: String =
        NEW.iter().chain([&DEPLOYMENT]).map(|p| format!("--- {p}\n{}", t.read(p))).collect();
    assert_golden!("openstack-leader-migration", text);
}

#[test]
fn the_flag_off_changes_nothing() {
    // The outputs themselves are the unchanged golden files of tests/it/openstack.rs.
    let t = openstack(&[]);
    t.expect(0);
    for path in NEW {
        assert!(!t.dir().join(path).exists(), "{path} written without {FLAG}");
    }
    assert!(!t.dir().join("leader-migration").exists());
    let deployment = t.read(DEPLOYMENT);
    assert!(!deployment.contains("leader-migration"), "{deployment}");
    assert!(
        deployment.contains("--leader-elect-resource-namespace=openshift-cloud-controller-manager")
    );
    // The options are recorded as before the flag existed, so an older state still matches.
    let state: serde_json::Value = serde_json::from_str(&t.read(STATE)).unwrap();
    assert_eq!(
        state["assets"]["options"]["content"],
        serde_json::json!({"vsphereConfigFormat": "yaml"})
    );
}

#[test]
fn toggling_the_flag_on_a_rerun_regenerates_only_what_depends_on_it() {
    let off = openstack(&[]);
    off.expect(0);
    let before = snapshot(&off);
    let state = off.read(STATE);
    std::thread::sleep(std::time::Duration::from_millis(20)); // mtime resolution, not a timing test
    let on = off.create(&CreateManifests::offline().flags(&[FLAG]));
    let run = on.expect(0);
    let want: BTreeSet<&str> = NEW.iter().copied().chain([DEPLOYMENT]).collect();
    assert_eq!(written(&run.stderr), want, "{}", run.stderr);
    let after = snapshot(&on);
    for (path, bytes, mtime) in &before {
        if path != DEPLOYMENT {
            assert!(after.contains(&(path.clone(), bytes.clone(), *mtime)), "{path} was touched");
        }
    }
    // And back: the added files go, the Deployment is as it was, and so is the state.
    let off = on.create(&CreateManifests::offline());
    let run = off.expect(0);
    assert_eq!(written(&run.stderr), BTreeSet::from([DEPLOYMENT]), "{}", run.stderr);
    for path in NEW {
        let line = format!("INFO Removed {path}, which is no longer generated\n");
        assert!(run.stderr.contains(&line), "{}", run.stderr);
    }
    let bytes = |s: Vec<(String, Vec<u8>, SystemTime)>| -> Vec<(String, Vec<u8>)> {
        s.into_iter().map(|(p, b, _)| (p, b)).collect()
    };
    assert_eq!(bytes(snapshot(&off)), bytes(before));
    assert_eq!(off.read(STATE), state);
}

#[test]
fn an_edited_ccm_configuration_is_kept_and_rolls_the_deployment() {
    let t = openstack(&[FLAG]);
    t.expect(0);
    let hash = |t: &Test| {
        let deployment = t.read(DEPLOYMENT);
        deployment.lines().find(|l| l.contains("config-hash:")).unwrap().to_owned()
    };
    let first = hash(&t);
    let edited = t.read(CONFIG_MAP).replacen(
        "- component: cloud-controller-manager\n      name: route",
        "- component: '*'\n      name: route",
        1,
    );
    assert_ne!(edited, t.read(CONFIG_MAP));
    std::fs::write(t.dir().join(CONFIG_MAP), &edited).unwrap();
    let run = t.expect(0);
    assert!(
        run.stderr.contains(&format!("INFO Kept user edits to {CONFIG_MAP}\n")),
        "{}",
        run.stderr
    );
    assert_eq!(written(&run.stderr), BTreeSet::from([DEPLOYMENT]), "{}", run.stderr);
    assert_eq!(t.read(CONFIG_MAP), edited);
    assert_ne!(hash(&t), first);
}

#[test]
fn every_other_platform_refuses_the_flag_by_name_and_writes_nothing() {
    for (case, t) in crate::platforms::cases() {
        let platform = case.split('-').next().unwrap();
        let t = crate::platforms::with_credentials(t).create(&crate::platforms::pinned(&[FLAG]));
        let before = tree(&t.dir());
        let run = t.expect(1);
        let message = format!(
            "ERROR --leader-migration is not supported on platform \"{platform}\": only the CCM \
             of openstack is known to take the migration lease"
        );
        assert!(run.stderr.contains(&message), "{case}: {}", run.stderr);
        assert_eq!(tree(&t.dir()), before, "{case}: nothing may be written");
    }
}
