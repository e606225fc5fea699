use super::*;

fn parse(text: &str) -> Result<Migration, String> {
    Migration::parse(text).map(|(m, _)| m)
}

#[test]
fn the_default_migrates_route_service_and_node_lifecycle_under_the_upstream_lease() {
    let m = Migration::default_config();
    assert_eq!(m.leader_name, "cloud-provider-extraction-migration");
    for name in [ControllerName::Service, ControllerName::Route, ControllerName::CloudNodeLifecycle]
    {
        assert_eq!(m.placement(name), Some(Placement::Migrated), "{name}");
    }
    assert_eq!(m.placement(ControllerName::CloudNode), None, "initialization is not migrated");
    assert_eq!(Migration::load(None).unwrap(), m);
}

#[test]
fn canonical_names_aliases_and_the_controller_forms_all_name_the_same_controller() {
    for (name, want) in [
        ("service-lb-controller", ControllerName::Service),
        ("service", ControllerName::Service),
        ("service-controller", ControllerName::Service),
        ("node-route-controller", ControllerName::Route),
        ("route", ControllerName::Route),
        ("route-controller", ControllerName::Route),
        ("cloud-node-lifecycle-controller", ControllerName::CloudNodeLifecycle),
        ("cloud-node-lifecycle", ControllerName::CloudNodeLifecycle),
        ("cloud-node", ControllerName::CloudNode),
    ] {
        let text = format!(
            "apiVersion: controllermanager.config.k8s.io/v1\nkind: LeaderMigrationConfiguration\n\
             controllerLeaders:\n- name: {name}\n  component: cloud-controller-manager\n"
        );
        let m = parse(&text).unwrap();
        assert_eq!(m.placement(want), Some(Placement::Migrated), "{name}");
        assert_eq!(m.leader_name, DEFAULT_LEADER_NAME, "leaderName defaults");
    }
}

#[test]
fn a_controller_listed_for_the_other_component_never_runs_here() {
    let m = parse(
        "apiVersion: controllermanager.config.k8s.io/v1\nkind: LeaderMigrationConfiguration\n\
         leaderName: my-migration\ncontrollerLeaders:\n\
         - {name: service, component: kube-controller-manager}\n\
         - {name: cloud-node-lifecycle, component: '*'}\n- {name: no-such, component: '*'}\n",
    )
    .unwrap();
    assert_eq!(m.leader_name, "my-migration");
    assert_eq!(m.placement(ControllerName::Service), Some(Placement::Elsewhere));
    assert_eq!(m.placement(ControllerName::CloudNodeLifecycle), Some(Placement::Migrated));
    assert_eq!(m.placement(ControllerName::Route), None);
}

#[test]
fn decoding_is_strict_and_errors_say_what_is_wrong() {
    let head =
        "apiVersion: controllermanager.config.k8s.io/v1\nkind: LeaderMigrationConfiguration\n";
    // v1 has no resourceLock (the docs' example still shows one).
    let err = parse(&format!("{head}resourceLock: leases\n")).unwrap_err();
    assert!(err.contains("resourceLock"), "{err}");
    let err = parse(&format!("{head}controllerLeaders:\n- {{name: service, componet: x}}\n"))
        .unwrap_err();
    assert!(err.contains("componet"), "{err}");
    let err = parse(
        "apiVersion: controllermanager.config.k8s.io/v1beta1\nkind: LeaderMigrationConfiguration\n",
    )
    .unwrap_err();
    assert!(err.contains("v1beta1") && err.contains("expected"), "{err}");
    let err = parse(&format!("{head}controllerLeaders:\n- {{name: service, component: '*'}}\n- {{name: service-lb-controller, component: '*'}}\n"))
        .unwrap_err();
    assert!(err.contains("twice"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("migration.yaml");
    std::fs::write(&path, format!("{head}bogus: 1\n")).unwrap();
    let err = Migration::load(Some(&path)).unwrap_err().to_string();
    assert!(err.contains("--leader-migration-config") && err.contains("migration.yaml"), "{err}");
}
