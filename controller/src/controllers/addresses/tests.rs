use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::cloud::Server;
use crate::cloud::neutron::{FixedIp, Port};
use crate::cloud::nova::ServerAddress;
use AddressType::{ExternalIP, Hostname, InternalIP};

fn port(status: &str, ips: &[&str]) -> Port {
    Port {
        status: status.into(),
        fixed_ips: ips
            .iter()
            .map(|ip| FixedIp { ip_address: (*ip).into(), subnet_id: String::new() })
            .collect(),
        ..Port::default()
    }
}

fn nova(entries: &[(&str, &str, &str)]) -> BTreeMap<String, Vec<ServerAddress>> {
    let mut map: BTreeMap<String, Vec<ServerAddress>> = BTreeMap::new();
    for (network, ip, kind) in entries {
        let version = if ip.contains(':') { 6 } else { 4 };
        map.entry((*network).into()).or_default().push(ServerAddress {
            addr: (*ip).into(),
            version,
            kind: (*kind).into(),
        });
    }
    map
}

fn instance(ports: Vec<Port>, addresses: &[(&str, &str, &str)]) -> Instance {
    Instance {
        server: Server { addresses: nova(addresses), ..Server::default() },
        ports,
        flavor_name: None,
    }
}

fn pairs(list: &[NodeAddress]) -> Vec<(AddressType, &str)> {
    list.iter().map(|a| (a.kind, a.address.as_str())).collect()
}

#[test]
fn ports_give_internal_and_floating_gives_external() {
    let i = instance(
        vec![port("ACTIVE", &["10.0.0.5"]), port("DOWN", &["10.0.9.9"])],
        &[("private", "10.0.0.5", "fixed"), ("private", "172.24.4.10", "floating")],
    );
    let got = select(&i, &Networking::default());
    assert_eq!(pairs(&got), [(InternalIP, "10.0.0.5"), (ExternalIP, "172.24.4.10")]);
}

#[test]
fn multi_network_with_public_and_internal_filters() {
    let i = instance(
        vec![
            port("ACTIVE", &["10.0.0.5"]),
            port("ACTIVE", &["192.168.1.5"]),
            port("ACTIVE", &["10.9.0.5"]),
        ],
        &[
            ("private", "10.0.0.5", "fixed"),
            ("public", "192.168.1.5", "fixed"),
            ("storage", "10.9.0.5", "fixed"),
        ],
    );
    let net = Networking {
        public_network_names: vec!["public".into()],
        internal_network_names: vec!["private".into()],
        ..Networking::default()
    };
    let got = select(&i, &net);
    assert_eq!(pairs(&got), [(InternalIP, "10.0.0.5"), (ExternalIP, "192.168.1.5")]);
}

#[test]
fn dual_stack_and_ipv6_disabled() {
    let i = instance(
        vec![port("ACTIVE", &["10.0.0.5", "fd00::5"])],
        &[("private", "10.0.0.5", "fixed"), ("private", "fd00::5", "fixed")],
    );
    assert_eq!(
        pairs(&select(&i, &Networking::default())),
        [(InternalIP, "10.0.0.5"), (InternalIP, "fd00::5")]
    );
    let net = Networking { ipv6_support_disabled: true, ..Networking::default() };
    assert_eq!(pairs(&select(&i, &net)), [(InternalIP, "10.0.0.5")]);
}

#[test]
fn access_ips_and_hostname_metadata() {
    let mut i = instance(vec![], &[]);
    i.server.access_ipv4 = "203.0.113.7".into();
    i.server.access_ipv6 = "2001:db8::7".into();
    i.server.metadata.insert("hostname".into(), "node-a.example".into());
    let got = select(&i, &Networking::default());
    assert_eq!(
        pairs(&got),
        [(ExternalIP, "203.0.113.7"), (ExternalIP, "2001:db8::7"), (Hostname, "node-a.example")]
    );
}

#[test]
fn sort_order_puts_earlier_cidrs_first_ascending_within() {
    let i =
        instance(vec![port("ACTIVE", &["10.0.0.9", "192.168.0.2", "10.0.0.3", "172.16.0.1"])], &[]);
    let net = Networking {
        address_sort_order: vec!["192.168.0.0/16".parse().unwrap(), "10.0.0.0/8".parse().unwrap()],
        ..Networking::default()
    };
    let got = select(&i, &net);
    let ips: Vec<&str> = got.iter().map(|a| a.address.as_str()).collect();
    assert_eq!(ips, ["192.168.0.2", "10.0.0.3", "10.0.0.9", "172.16.0.1"]);
}

#[test]
fn node_ip_goes_first_and_is_the_only_address_of_its_type() {
    let cloud = vec![
        addr(InternalIP, "10.0.0.5"),
        addr(InternalIP, "10.1.0.5"),
        addr(ExternalIP, "172.24.4.10"),
    ];
    let got = with_node_ip(&cloud, "10.1.0.5").unwrap();
    assert_eq!(pairs(&got), [(InternalIP, "10.1.0.5"), (ExternalIP, "172.24.4.10")]);
    let err = with_node_ip(&cloud, "10.9.9.9").unwrap_err();
    assert!(err.contains("not among the server's addresses"), "{err}");
    assert!(with_node_ip(&cloud, "nonsense").is_err());
}

proptest! {
    #[test]
    fn sorting_is_a_stable_permutation_with_matching_addresses_first(
        octets in proptest::collection::vec((0u8..3, 0u8..255), 0..12)
    ) {
        let prefixes = ["10.0.0", "192.168.0", "172.16.0"];
        let mut list: Vec<NodeAddress> =
            octets.iter().map(|(p, o)| addr(InternalIP, &format!("{}.{o}", prefixes[*p as usize]))).collect();
        let before = list.clone();
        let order: Vec<ipnet::IpNet> = vec!["192.168.0.0/24".parse().unwrap(), "10.0.0.0/24".parse().unwrap()];
        sort(&mut list, &order);
        let mut a = before.clone();
        let mut b = list.clone();
        a.sort_by(|x, y| x.address.cmp(&y.address));
        b.sort_by(|x, y| x.address.cmp(&y.address));
        prop_assert_eq!(a, b);
        let rank = |a: &NodeAddress| if a.address.starts_with("192.168.") { 0 } else if a.address.starts_with("10.") { 1 } else { 2 };
        for pair in list.windows(2) {
            prop_assert!(rank(&pair[0]) <= rank(&pair[1]));
        }
        let rest: Vec<&NodeAddress> = list.iter().filter(|a| rank(a) == 2).collect();
        let rest_before: Vec<&NodeAddress> = before.iter().filter(|a| rank(a) == 2).collect();
        prop_assert_eq!(rest, rest_before);
    }
}

#[test]
fn address_types_serialize_to_their_wire_names() {
    for kind in AddressType::ALL {
        assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        assert_eq!(AddressType::from_wire(kind.as_str()), Some(kind));
    }
    let wire = serde_json::to_value(addr(InternalIP, "10.0.0.5")).unwrap();
    assert_eq!(wire, serde_json::json!({"type": "InternalIP", "address": "10.0.0.5"}));
    assert_eq!(AddressType::from_wire("InternalDNS"), None);
}
