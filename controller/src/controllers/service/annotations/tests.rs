use super::*;

fn defaults() -> Defaults {
    Defaults {
        lb_method: "ROUND_ROBIN".into(),
        monitor: Monitor {
            delay: Duration::from_secs(5),
            timeout: Duration::from_secs(3),
            max_retries: 1,
            max_retries_down: 3,
        },
        subnet_id: Some("config-subnet".into()),
        floating_network_id: Some("config-fip-net".into()),
        ..Defaults::default()
    }
}

fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn ours(short: &str) -> String {
    format!("{PREFIX}{short}")
}

#[test]
fn without_annotations_the_config_decides() {
    let got = settings(&BTreeMap::new(), &defaults(), &BTreeMap::new()).unwrap();
    assert_eq!(got.subnet_id.as_deref(), Some("config-subnet"));
    assert_eq!(got.floating_network_id.as_deref(), Some("config-fip-net"));
    assert_eq!((got.connection_limit, got.monitor, got.internal), (-1, None, false));
    assert!(got.ignored.is_empty());
}

#[test]
fn annotations_override_the_class_which_overrides_the_config() {
    let gold = Class {
        subnet_id: Some("gold-subnet".into()),
        network_id: Some("gold-net".into()),
        ..Class::default()
    };
    let classes = BTreeMap::from([("gold".to_owned(), gold)]);
    let a = annotations(&[
        (&ours("class"), "gold"),
        (&ours("subnet-id"), "annotated-subnet"),
        (&ours("enable-health-monitor"), "true"),
        (&ours("health-monitor-delay"), "20"),
        (&ours("lb-method"), "LEAST_CONNECTIONS"),
        (&ours("connection-limit"), "500"),
        (&ours("node-selector"), "pool=web, zone = a"),
        (INTERNAL, "true"),
    ]);
    let got = settings(&a, &defaults(), &classes).unwrap();
    assert_eq!(got.subnet_id.as_deref(), Some("annotated-subnet"));
    assert_eq!(got.network_id.as_deref(), Some("gold-net"));
    assert_eq!(got.monitor.unwrap().delay, Duration::from_secs(20));
    assert_eq!(got.monitor.unwrap().max_retries_down, 3);
    assert_eq!((got.lb_method.as_str(), got.connection_limit), ("LEAST_CONNECTIONS", 500));
    assert_eq!(got.node_selector.get("zone").map(String::as_str), Some("a"));
    assert!(got.internal);
}

#[test]
fn every_bad_value_is_reported_at_once_naming_its_annotation() {
    let a = annotations(&[
        (&ours("class"), "missing"),
        (&ours("keep-floatingip"), "yes please"),
        (&ours("health-monitor-delay"), "5s"),
        (&ours("connection-limit"), "-2"),
        (&ours("lb-method"), "FASTEST"),
        (&ours("proxy-protocol"), "v3"),
        (&ours("node-selector"), "pool"),
    ]);
    let errors = settings(&a, &defaults(), &BTreeMap::new()).unwrap_err();
    assert_eq!(errors.len(), 7, "{errors:#?}");
    let named =
        ["class", "keep-floatingip", "health-monitor-delay", "connection-limit", "lb-method"];
    for short in named.into_iter().chain(["proxy-protocol", "node-selector"]) {
        assert!(errors.iter().any(|e| e.starts_with(&ours(short))), "{short}: {errors:#?}");
    }
}

#[test]
fn a_bad_lb_method_in_the_config_names_the_config_key() {
    let defaults = Defaults { lb_method: "FASTEST".into(), ..defaults() };
    let errors = settings(&BTreeMap::new(), &defaults, &BTreeMap::new()).unwrap_err();
    assert_eq!(
        errors,
        ["[LoadBalancer] lb-method: \"FASTEST\" is not one of ROUND_ROBIN, LEAST_CONNECTIONS, \
          SOURCE_IP, SOURCE_IP_PORT"]
    );
}

#[test]
fn ignored_and_unknown_annotations_are_listed_with_the_reason() {
    let a = annotations(&[
        (&ours("x-forwarded-for"), "true"),
        (&ours("no-such-thing"), "1"),
        ("example.com/other", "x"),
    ]);
    let got = settings(&a, &defaults(), &BTreeMap::new()).unwrap();
    let keys: Vec<&str> = got.ignored.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, [ours("no-such-thing"), ours("x-forwarded-for")]);
    assert!(got.ignored[0].1.contains("not an annotation"));
}

#[test]
fn an_annotation_upstream_writes_itself_is_not_ignored_with_a_warning() {
    // Issue 36 (3b): after a takeover every full reconcile warned about it.
    let a = annotations(&[
        (&ours("load-balancer-address"), "203.0.113.7"),
        (&ours("load-balancer-id"), "6f1e0b9a-5d2c-4c8e-9f00-1234567890ab"),
    ]);
    let got = settings(&a, &defaults(), &BTreeMap::new()).unwrap();
    assert_eq!(got.ignored, Vec::new());
    let support = ANNOTATIONS.iter().find(|(short, _)| *short == "load-balancer-address");
    assert_eq!(support, Some(&("load-balancer-address", Support::Written)));
}

#[test]
fn proxy_protocol_picks_the_pool_protocol() {
    for (value, want) in [("true", Some("PROXY")), ("v2", Some("PROXYV2")), ("false", None)] {
        let a = annotations(&[(&ours("proxy-protocol"), value)]);
        assert_eq!(settings(&a, &defaults(), &BTreeMap::new()).unwrap().proxy_protocol, want);
    }
}

#[test]
fn the_floating_subnet_comes_whole_from_the_class_else_the_annotations_else_the_config() {
    let config = Defaults {
        floating_subnet: FloatingSubnet { id: Some("config-subnet".into()), ..Default::default() },
        ..defaults()
    };
    let given = annotations(&[(&ours("floating-subnet"), "public-*")]);
    let got = settings(&given, &config, &BTreeMap::new()).unwrap().floating_subnet;
    // The annotations as a whole: their pattern, not the config's ID beside it.
    assert_eq!(got, FloatingSubnet { pattern: Some("public-*".into()), ..Default::default() });
    let none = settings(&BTreeMap::new(), &config, &BTreeMap::new()).unwrap().floating_subnet;
    assert_eq!(none.id.as_deref(), Some("config-subnet"));

    let class = Class {
        floating_subnet: FloatingSubnet { tags: Some("&a,b".into()), ..Default::default() },
        ..Class::default()
    };
    let classes = BTreeMap::from([("gold".to_owned(), class)]);
    let with_class = annotations(&[(&ours("class"), "gold"), (&ours("floating-subnet"), "x")]);
    let got = settings(&with_class, &config, &classes).unwrap().floating_subnet;
    assert_eq!(got, FloatingSubnet { tags: Some("&a,b".into()), ..Default::default() });

    let bad = annotations(&[(&ours("floating-subnet"), "~(")]);
    let errors = settings(&bad, &config, &BTreeMap::new()).unwrap_err();
    assert!(errors[0].starts_with("floating-subnet \"~(\": not a valid pattern"), "{errors:?}");
}

#[test]
fn the_load_balancer_id_constant_is_the_prefixed_annotation() {
    assert_eq!(LOAD_BALANCER_ID, format!("{PREFIX}load-balancer-id"));
    assert!(ANNOTATIONS.iter().any(|(short, _)| *short == "load-balancer-id"));
}

/// Issue 41 (4): the annotation overrides the global `enable-ingress-hostname` for one Service
/// either way; the suffix stays the global `ingress-hostname-suffix`.
#[test]
fn enable_ingress_hostname_per_service_overrides_the_global_key() {
    let off = Defaults { ingress_hostname_suffix: "nip.io".into(), ..defaults() };
    let on = Defaults { enable_ingress_hostname: true, ..off.clone() };
    let key = ours("enable-ingress-hostname");
    let cases = [
        (&off, None, None),
        (&on, None, Some("nip.io")),
        (&off, Some("true"), Some("nip.io")),
        (&on, Some("false"), None),
        (&on, Some("true"), Some("nip.io")),
    ];
    for (base, value, want) in cases {
        let a = annotations(
            value.as_slice().iter().map(|v| (key.as_str(), *v)).collect::<Vec<_>>().as_slice(),
        );
        let got = settings(&a, base, &BTreeMap::new()).unwrap();
        assert_eq!(
            got.ingress_hostname_suffix.as_deref(),
            want,
            "global {}, annotation {value:?}",
            base.enable_ingress_hostname
        );
        assert!(got.ignored.is_empty(), "{:?}", got.ignored);
    }
    let bad = annotations(&[(&key, "sometimes")]);
    let errors = settings(&bad, &on, &BTreeMap::new()).unwrap_err();
    assert_eq!(errors, [format!("{key}: \"sometimes\" is not a boolean (true or false)")]);
}
