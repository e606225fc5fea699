use super::*;

fn port(protocol: &str, node_port: u16) -> Port {
    Port { protocol: protocol.to_owned(), port: 80, node_port }
}

fn member(address: &str) -> Backend {
    Backend { name: format!("n-{address}"), address: address.to_owned(), server_id: None }
}

fn listed(rules: &BTreeSet<RuleSpec>) -> Vec<(String, String, u16, String)> {
    rules
        .iter()
        .map(|r| {
            (
                r.ethertype.clone(),
                r.protocol.clone().unwrap(),
                r.port_range_min.unwrap(),
                r.remote_ip_prefix.clone().unwrap(),
            )
        })
        .collect()
}

/// What a client-address provider (OVN) is given.
fn from_clients(
    ports: &[Port],
    ranges: &[String],
    members: &[Backend],
    cidrs: &[String],
) -> BTreeSet<RuleSpec> {
    rules(ports, &prefixes(Traffic::FromClients, ranges, members, cidrs))
}

#[test]
fn only_ovn_keeps_the_clients_addresses_and_an_unknown_provider_gets_what_works_for_any() {
    for proxy in ["amphora", "octavia", "amphorav2", "f5"] {
        assert_eq!(Traffic::of(Some(proxy)), Traffic::Proxied, "{proxy}");
    }
    assert_eq!(Traffic::of(Some("ovn")), Traffic::FromClients);
    assert_eq!(Traffic::of(None), Traffic::FromClients);
}

#[test]
fn behind_a_proxy_node_ports_are_open_only_to_the_load_balancers_subnets_whatever_the_ranges() {
    let cidrs = ["10.0.0.0/24".to_owned(), "fd00::/64".to_owned()];
    let members = [member("10.0.0.5"), member("fd00::5")];
    for ranges in [vec![], vec!["192.0.2.0/24".to_owned()], vec!["0.0.0.0/0".to_owned()]] {
        let got = rules(
            &[port("TCP", 30080), port("TCP", 0)],
            &prefixes(Traffic::Proxied, &ranges, &members, &cidrs),
        );
        assert_eq!(
            listed(&got),
            [
                ("IPv4".into(), "tcp".into(), 30080, "10.0.0.0/24".into()),
                ("IPv6".into(), "tcp".into(), 30080, "fd00::/64".into()),
            ],
            "source ranges {ranges:?}: the load balancer applies them on its listeners"
        );
    }
}

#[test]
fn with_client_addresses_and_no_source_ranges_each_node_port_is_open_to_the_members_families() {
    let rules = from_clients(
        &[port("TCP", 30080), port("UDP", 30053), port("TCP", 0)],
        &[],
        &[member("10.0.0.5"), member("fd00::5")],
        &["10.0.0.0/24".to_owned()],
    );
    assert_eq!(
        listed(&rules),
        [
            ("IPv4".into(), "tcp".into(), 30080, "0.0.0.0/0".into()),
            ("IPv4".into(), "udp".into(), 30053, "0.0.0.0/0".into()),
            ("IPv6".into(), "tcp".into(), 30080, "::/0".into()),
            ("IPv6".into(), "udp".into(), 30053, "::/0".into()),
        ]
    );
    assert!(rules.iter().all(|r| r.direction == "ingress" && r.port_range_max == r.port_range_min));
}

#[test]
fn client_addresses_in_source_ranges_and_the_member_subnet_for_health_checks() {
    let ranges = ["192.0.2.0/24".to_owned()];
    let rules = from_clients(
        &[port("TCP", 30080)],
        &ranges,
        &[member("10.0.0.5")],
        &["10.0.0.0/24".to_owned()],
    );
    let got: Vec<String> = listed(&rules).into_iter().map(|p| p.3).collect();
    assert_eq!(got, ["10.0.0.0/24", "192.0.2.0/24"]);
}

#[test]
fn no_members_still_gives_an_ipv4_rule_per_port() {
    let rules = from_clients(&[port("SCTP", 30000)], &[], &[], &[]);
    assert_eq!(listed(&rules), [("IPv4".into(), "sctp".into(), 30000, "0.0.0.0/0".into())]);
}

/// An in-memory Neutron for the take-over order: groups with rules (a rule may name a remote
/// group), ports with groups, and after every write a check that the member's NodePort is
/// still let in, by our layout or by the in-tree provider's.
mod neutron {
    use std::sync::Mutex;

    use super::*;
    use crate::cloud::neutron::FixedIp;
    use crate::cloud::revision::Written;
    use crate::cloud::security_groups::{Rule, Subnet};

    #[derive(Debug, Clone)]
    pub(super) struct FakeRule {
        pub(super) id: String,
        pub(super) group: String,
        pub(super) spec: RuleSpec,
        pub(super) remote_group: Option<String>,
    }

    #[derive(Debug, Default)]
    pub(super) struct State {
        pub(super) groups: Vec<SecurityGroup>,
        pub(super) rules: Vec<FakeRule>,
        /// (port id, address, groups)
        pub(super) ports: Vec<(String, String, Vec<String>)>,
        pub(super) log: Vec<String>,
        pub(super) next: u32,
        /// Each port's revision (1 until written), bumped by every write of its groups.
        pub(super) revisions: std::collections::BTreeMap<String, u64>,
        /// Another writer's group, put on the member's port right before our first write to it.
        pub(super) interloper: Option<String>,
        /// Another writer's tag, put on a group right before our first tag write to it.
        pub(super) tag_interloper: Option<String>,
    }

    /// The NodePort checked after every write, and its member's port.
    pub(super) struct Fake {
        pub(super) state: Mutex<State>,
        pub(super) node_port: u16,
        pub(super) member_port: String,
    }

    impl Fake {
        fn write(&self, what: String, change: impl FnOnce(&mut State)) {
            let mut state = self.state.lock().unwrap();
            change(&mut state);
            state.log.push(what.clone());
            assert!(self.let_in(&state), "the NodePort is refused after {what}: {state:#?}");
        }

        fn let_in(&self, state: &State) -> bool {
            let groups_of = |port: &str| {
                state.ports.iter().find(|p| p.0 == port).map(|p| p.2.clone()).unwrap_or_default()
            };
            let opens = |r: &FakeRule| r.spec.port_range_min == Some(self.node_port);
            let member = groups_of(&self.member_port);
            // Ours: a group on the member's port lets the NodePort in from an address range.
            let direct = state.rules.iter().any(|r| {
                member.contains(&r.group) && opens(r) && r.spec.remote_ip_prefix.is_some()
            });
            // The in-tree provider's: a node group lets in the members of a group on some port.
            let carried = |g: &str| state.ports.iter().any(|p| p.2.iter().any(|x| x == g));
            let remote = state.rules.iter().any(|r| {
                member.contains(&r.group)
                    && opens(r)
                    && r.remote_group.as_deref().is_some_and(&carried)
            });
            direct || remote
        }

        fn group_view(state: &State, group: &SecurityGroup) -> SecurityGroup {
            let rules =
                state.rules.iter().filter(|r| r.group == group.id && r.remote_group.is_none());
            let security_group_rules = rules
                .map(|r| Rule {
                    id: r.id.clone(),
                    security_group_id: r.group.clone(),
                    spec: r.spec.clone(),
                })
                .collect();
            SecurityGroup { security_group_rules, ..group.clone() }
        }

        fn port_view(state: &State, port: &(String, String, Vec<String>)) -> MemberPort {
            let fixed = FixedIp { ip_address: port.1.clone(), subnet_id: "subnet".into() };
            MemberPort {
                id: port.0.clone(),
                fixed_ips: vec![fixed],
                device_id: String::new(),
                security_groups: port.2.clone(),
                port_security_enabled: Some(true),
                revision_number: state.revisions.get(&port.0).copied().unwrap_or(1),
            }
        }
    }

    impl SecurityGroups for Fake {
        async fn security_groups_named(
            &self,
            name: &str,
        ) -> crate::cloud::Result<Vec<SecurityGroup>> {
            let state = self.state.lock().unwrap();
            let named = state.groups.iter().filter(|g| g.name == name);
            Ok(named.map(|g| Fake::group_view(&state, g)).collect())
        }

        async fn create_security_group(
            &self,
            name: &str,
            description: &str,
            tags: &[String],
        ) -> crate::cloud::Result<SecurityGroup> {
            let mut state = self.state.lock().unwrap();
            state.next += 1;
            let group = SecurityGroup {
                id: format!("g{}", state.next),
                name: name.into(),
                description: description.into(),
                tags: tags.to_vec(),
                ..SecurityGroup::default()
            };
            state.groups.push(group.clone());
            state.log.push(format!("create group {name}"));
            Ok(group)
        }

        async fn add_security_group_tags(
            &self,
            id: &str,
            tags: &[String],
        ) -> crate::cloud::Result<()> {
            self.write(format!("tag {id}"), |s| {
                let theirs = s.tag_interloper.take();
                let group = s.groups.iter_mut().find(|g| g.id == id).expect("the group");
                group.tags.extend(theirs);
                for tag in tags {
                    if !group.tags.contains(tag) {
                        group.tags.push(tag.clone());
                    }
                }
            });
            Ok(())
        }

        async fn delete_security_group(&self, id: &str) -> crate::cloud::Result<()> {
            self.write(format!("delete group {id}"), |s| {
                s.groups.retain(|g| g.id != id);
                s.rules.retain(|r| r.group != id && r.remote_group.as_deref() != Some(id));
            });
            Ok(())
        }

        async fn create_rule(&self, group_id: &str, rule: &RuleSpec) -> crate::cloud::Result<()> {
            let what = format!(
                "add rule {:?} {:?} to {group_id}",
                rule.port_range_min, rule.remote_ip_prefix
            );
            self.write(what, |s| {
                s.next += 1;
                let id = format!("r{}", s.next);
                s.rules.push(FakeRule {
                    id,
                    group: group_id.into(),
                    spec: rule.clone(),
                    remote_group: None,
                });
            });
            Ok(())
        }

        async fn delete_rule(&self, id: &str) -> crate::cloud::Result<()> {
            self.write(format!("delete rule {id}"), |s| s.rules.retain(|r| r.id != id));
            Ok(())
        }

        async fn rules_naming_group(&self, group_id: &str) -> crate::cloud::Result<Vec<Rule>> {
            let state = self.state.lock().unwrap();
            let naming = state.rules.iter().filter(|r| r.remote_group.as_deref() == Some(group_id));
            Ok(naming
                .map(|r| Rule {
                    id: r.id.clone(),
                    security_group_id: r.group.clone(),
                    spec: r.spec.clone(),
                })
                .collect())
        }

        async fn ports_with_ips(
            &self,
            addresses: &[String],
        ) -> crate::cloud::Result<Vec<MemberPort>> {
            let state = self.state.lock().unwrap();
            let held = state.ports.iter().filter(|p| addresses.contains(&p.1));
            Ok(held.map(|p| Fake::port_view(&state, p)).collect())
        }

        async fn ports_in_group(&self, group_id: &str) -> crate::cloud::Result<Vec<MemberPort>> {
            let state = self.state.lock().unwrap();
            let carrying = state.ports.iter().filter(|p| p.2.iter().any(|g| g == group_id));
            Ok(carrying.map(|p| Fake::port_view(&state, p)).collect())
        }

        async fn member_port(&self, id: &str) -> crate::cloud::Result<MemberPort> {
            let mut state = self.state.lock().unwrap();
            state.log.push(format!("read port {id}"));
            let port = state.ports.iter().find(|p| p.0 == id).unwrap();
            Ok(Fake::port_view(&state, port))
        }

        async fn set_port_groups(
            &self,
            port_id: &str,
            groups: &[String],
            revision: Option<u64>,
        ) -> crate::cloud::Result<Written<()>> {
            let mut stale = false;
            self.write(format!("port {port_id} groups {groups:?}"), |s| {
                if port_id == self.member_port
                    && let Some(theirs) = s.interloper.take()
                {
                    s.ports
                        .iter_mut()
                        .filter(|p| p.0 == port_id)
                        .for_each(|p| p.2.push(theirs.clone()));
                    *s.revisions.entry(port_id.to_owned()).or_insert(1) += 1;
                }
                let current = s.revisions.get(port_id).copied().unwrap_or(1);
                if revision.is_some_and(|r| r != current) {
                    stale = true;
                    return;
                }
                s.ports.iter_mut().filter(|p| p.0 == port_id).for_each(|p| p.2 = groups.to_vec());
                s.revisions.insert(port_id.to_owned(), current + 1);
            });
            Ok(if stale { Written::Stale } else { Written::Done(()) })
        }

        /// `subnet` (the members') is 10.0.0.0/24, `vip-subnet` 10.1.0.0/24.
        async fn subnets(&self, ids: &[String]) -> crate::cloud::Result<Vec<Subnet>> {
            let cidr = |id: &str| match id {
                "subnet" => "10.0.0.0/24",
                "vip-subnet" => "10.1.0.0/24",
                other => panic!("no subnet {other}"),
            };
            Ok(ids.iter().map(|id| Subnet { id: id.clone(), cidr: cidr(id).into() }).collect())
        }
    }
}

/// A load balancer of the amphora provider with its VIP on `vip_subnet`.
fn amphora(vip_subnet: &str) -> LoadBalancer {
    LoadBalancer {
        provider: "amphora".into(),
        vip_subnet_id: vip_subnet.into(),
        ..LoadBalancer::default()
    }
}

/// What upstream's CCM left for Service shop/web (NodePort 30080) with the amphora provider:
/// its group, on the member's port, letting the NodePort in from the member subnet.
fn upstream_layout() -> neutron::Fake {
    use neutron::{Fake, FakeRule, State};
    let state = State {
        groups: vec![SecurityGroup {
            id: "theirs".into(),
            name: "lb-sg-u1-shop-web".into(),
            description: "Security Group for shop/web Service LoadBalancer in cluster infra".into(),
            ..SecurityGroup::default()
        }],
        rules: vec![FakeRule {
            id: "subnet-rule".into(),
            group: "theirs".into(),
            spec: RuleSpec {
                direction: "ingress".into(),
                ethertype: "IPv4".into(),
                protocol: Some("tcp".into()),
                port_range_min: Some(30080),
                port_range_max: Some(30080),
                remote_ip_prefix: Some("10.0.0.0/24".into()),
            },
            remote_group: None,
        }],
        ports: vec![("member".into(), "10.0.0.5".into(), vec!["theirs".into()])],
        ..State::default()
    };
    Fake { state: std::sync::Mutex::new(state), node_port: 30080, member_port: "member".into() }
}

#[tokio::test]
async fn upstreams_group_behind_an_amphora_is_taken_over_with_its_member_subnet_rule_as_it_is() {
    let service = ServiceId::new("infra", "shop", "web", "u1");
    let owner = Owner { service: &service, load_balancer: "kube_service_infra_shop_web" };
    let members = [member("10.0.0.5")];
    for ranges in [vec![], vec!["192.0.2.0/24".to_owned()]] {
        let cloud = upstream_layout();
        let lb = amphora("subnet");
        let node_ports = [port("TCP", 30080)];
        ensure(&cloud, owner, Some(&lb), &node_ports, &ranges, &members).await.unwrap();
        let state = cloud.state.lock().unwrap();
        // Not widened to everyone (nor to the source ranges, which the listener applies):
        // no rule written at all, only our tags.
        assert_eq!(state.log, ["tag theirs"], "source ranges {ranges:?}");
        let left: Vec<&str> = state.rules.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(left, ["subnet-rule"]);
    }
}

#[tokio::test]
async fn behind_an_amphora_on_another_subnet_the_vip_subnet_is_let_in_too() {
    let cloud = member_with_its_node_group(None);
    let service = ServiceId::new("infra", "shop", "web", "u1");
    let owner = Owner { service: &service, load_balancer: "kube_service_infra_shop_web" };
    let lb = amphora("vip-subnet");
    let node_ports = [port("TCP", 30080)];
    ensure(&cloud, owner, Some(&lb), &node_ports, &[], &[member("10.0.0.5")]).await.unwrap();
    let state = cloud.state.lock().unwrap();
    let ours = state.groups.iter().find(|g| g.name == "lb-sg-u1-shop-web").unwrap();
    let mut got: Vec<&str> = state
        .rules
        .iter()
        .filter(|r| r.group == ours.id)
        .filter_map(|r| r.spec.remote_ip_prefix.as_deref())
        .collect();
    got.sort_unstable();
    // The amphora reaches a member outside the VIP subnet from its VIP-subnet address.
    assert_eq!(got, ["10.0.0.0/24", "10.1.0.0/24"]);
}

/// What the in-tree provider left for Service shop/web (NodePort 30080): its group on the VIP
/// port with a rule for the Service port and ICMP, and a rule in the node's group that lets in
/// the members of that group.
fn in_tree_layout() -> neutron::Fake {
    use neutron::{Fake, FakeRule, State};
    let spec = |port: Option<u16>, protocol: &str, prefix: Option<&str>| RuleSpec {
        direction: "ingress".into(),
        ethertype: "IPv4".into(),
        protocol: Some(protocol.into()),
        port_range_min: port,
        port_range_max: port,
        remote_ip_prefix: prefix.map(str::to_owned),
    };
    let group = |id: &str, name: &str, description: &str| SecurityGroup {
        id: id.into(),
        name: name.into(),
        description: description.into(),
        ..SecurityGroup::default()
    };
    let lb_group = "lb-sg-u1-shop-web";
    let state = State {
        groups: vec![
            group(
                "theirs",
                lb_group,
                "Security Group for shop/web Service LoadBalancer in cluster kubernetes",
            ),
            group("node", "k8s-node", "the nodes' own group"),
        ],
        rules: vec![
            FakeRule {
                id: "svc".into(),
                group: "theirs".into(),
                spec: spec(Some(80), "tcp", Some("0.0.0.0/0")),
                remote_group: None,
            },
            FakeRule {
                id: "icmp".into(),
                group: "theirs".into(),
                spec: spec(Some(3), "icmp", Some("0.0.0.0/0")),
                remote_group: None,
            },
            FakeRule {
                id: "via".into(),
                group: "node".into(),
                spec: spec(Some(30080), "tcp", None),
                remote_group: Some("theirs".into()),
            },
        ],
        ports: vec![
            ("vip".into(), "10.0.0.200".into(), vec!["theirs".into()]),
            ("member".into(), "10.0.0.5".into(), vec!["node".into()]),
        ],
        ..State::default()
    };
    Fake { state: std::sync::Mutex::new(state), node_port: 30080, member_port: "member".into() }
}

#[tokio::test]
async fn the_in_tree_layout_moves_to_ours_without_a_moment_where_the_node_port_is_refused() {
    let cloud = in_tree_layout();
    let service = ServiceId::new("infra", "shop", "web", "u1");
    let owner = Owner { service: &service, load_balancer: "kube_service_infra_shop_web" };
    let members = [member("10.0.0.5")];
    // Someone tags the group between our read of it and our tags: theirs is kept.
    cloud.state.lock().unwrap().tag_interloper = Some("set-by-someone-else".into());
    // Every write checks that the NodePort is let in (the fake asserts it).
    let lb = amphora("subnet");
    ensure(&cloud, owner, Some(&lb), &[port("TCP", 30080)], &[], &members).await.unwrap();
    let log = {
        let state = cloud.state.lock().unwrap();
        let ports: Vec<(&str, &[String])> =
            state.ports.iter().map(|p| (p.0.as_str(), p.2.as_slice())).collect();
        assert_eq!(
            ports,
            [("vip", &[][..]), ("member", &["node".to_owned(), "theirs".to_owned()][..])]
        );
        let theirs = state.groups.iter().find(|g| g.id == "theirs").unwrap();
        assert_eq!(
            theirs.tags,
            ["set-by-someone-else", "kube_service_infra_shop_web", names::OWNER_TAG],
            "tagged as ours, and the tag written meanwhile kept"
        );
        let left: Vec<(&str, Option<u16>)> =
            state.rules.iter().map(|r| (r.group.as_str(), r.spec.port_range_min)).collect();
        assert_eq!(left, [("theirs", Some(30080))], "only our rule is left: {:#?}", state.rules);
        // Tagged last, after the node group's rule and the VIP port were let go.
        let step = |needle: &str| state.log.iter().position(|l| l.contains(needle)).unwrap();
        assert!(step("port member") < step("delete rule via"), "{:#?}", state.log);
        assert!(step("delete rule via") < step("port vip"), "{:#?}", state.log);
        assert!(step("port vip") < step("tag theirs"), "{:#?}", state.log);
        state.log.len()
    };

    // Taken over: the next ensure writes nothing.
    ensure(&cloud, owner, Some(&lb), &[port("TCP", 30080)], &[], &members).await.unwrap();
    assert_eq!(cloud.state.lock().unwrap().log.len(), log);
}

/// A rule of the node's group that lets port 1 in: the fake's check passes with it whatever
/// our group does (for tests that are not about the take-over order).
fn open_port_one() -> neutron::FakeRule {
    neutron::FakeRule {
        id: "keep".into(),
        group: "node".into(),
        spec: RuleSpec {
            port_range_min: Some(1),
            remote_ip_prefix: Some("0.0.0.0/0".into()),
            ..RuleSpec::default()
        },
        remote_group: None,
    }
}

/// The member's port (10.0.0.5) with the node's own group, which lets the fake's checked port 1
/// in; `interloper`: another writer's group, put on the port right before our first write.
fn member_with_its_node_group(interloper: Option<&str>) -> neutron::Fake {
    let state = neutron::State {
        groups: vec![SecurityGroup { id: "node".into(), ..SecurityGroup::default() }],
        rules: vec![open_port_one()],
        ports: vec![("member".into(), "10.0.0.5".into(), vec!["node".into()])],
        interloper: interloper.map(str::to_owned),
        ..neutron::State::default()
    };
    neutron::Fake {
        state: std::sync::Mutex::new(state),
        node_port: 1,
        member_port: "member".into(),
    }
}

#[tokio::test]
async fn a_service_deleted_before_the_take_over_leaves_no_rule_in_the_nodes_groups() {
    let cloud = in_tree_layout();
    let service = ServiceId::new("infra", "shop", "web", "u1");
    let owner = Owner { service: &service, load_balancer: "" };
    // Once the Service goes nothing needs its NodePort: the fake's check is off.
    let cloud = neutron::Fake { node_port: 1, ..cloud };
    cloud.state.lock().unwrap().rules.push(open_port_one());
    delete(&cloud, owner).await.unwrap();
    let state = cloud.state.lock().unwrap();
    assert!(state.groups.iter().all(|g| g.id != "theirs"), "{:#?}", state.groups);
    let left: Vec<&str> = state.rules.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(left, ["keep"], "the node group keeps its own rules only");
}

#[tokio::test]
async fn a_port_changed_by_another_writer_is_read_again_and_keeps_both_groups() {
    let cloud = member_with_its_node_group(Some("another-service"));
    let service = ServiceId::new("infra", "shop", "web", "u1");
    let owner = Owner { service: &service, load_balancer: "kube_service_infra_shop_web" };
    ensure(&cloud, owner, None, &[port("TCP", 30080)], &[], &[member("10.0.0.5")]).await.unwrap();
    let state = cloud.state.lock().unwrap();
    let ours = state.groups.iter().find(|g| g.name == "lb-sg-u1-shop-web").unwrap();
    let member = state.ports.iter().find(|p| p.0 == "member").unwrap();
    assert_eq!(member.2, ["node", "another-service", ours.id.as_str()], "{:#?}", state.log);
    // The first write met the other writer's revision (412): the port was read again.
    let writes: Vec<&String> =
        state.log.iter().filter(|l| l.contains("port member") || l.contains("read port")).collect();
    assert_eq!(writes.len(), 3, "write (stale), read, write: {writes:#?}");
    assert_eq!(writes[1], "read port member");
}

/// Two networks with one range: the member's address is held by a port of its own server and
/// by another network's port. The group goes on its own server's port; with no server to tell
/// them apart, on neither; with one holder, on it.
#[test]
fn a_member_takes_its_own_servers_port_when_two_networks_hold_its_address() {
    let holder = |id: &str, server: &str, subnet: &str| MemberPort {
        id: id.into(),
        device_id: server.into(),
        fixed_ips: vec![crate::cloud::neutron::FixedIp {
            ip_address: "10.0.0.5".into(),
            subnet_id: subnet.into(),
        }],
        ..MemberPort::default()
    };
    let found = [holder("other-network", "srv-x", "b"), holder("own", "srv-a", "a")];
    let own = Backend { server_id: Some("srv-a".into()), ..member("10.0.0.5") };
    let got = member_ports(std::slice::from_ref(&own), &found);
    assert_eq!((got["10.0.0.5"].0.id.as_str(), got["10.0.0.5"].1.as_str()), ("own", "a"));
    let unknown = member("10.0.0.5");
    assert!(member_ports(std::slice::from_ref(&unknown), &found).is_empty(), "ambiguous");
    let alone = member_ports(&[unknown], &found[..1]);
    assert_eq!(alone["10.0.0.5"].0.id, "other-network", "the only holder");
}
