//! The OpenStack rules as a table: each case an install-config fragment under
//! `platform.openstack` (or a whole `rest` after the header) and the exact errors.

use crate::installconfig::validate::tests::errors;

/// (what the case shows, `platform.openstack` as a YAML flow mapping body, expected errors)
const PLATFORM_CASES: &[(&str, &str, &[&str])] = &[
    ("minimal", "", &[]),
    (
        "an unknown load balancer type is an invalid value, as the installer words it",
        "loadBalancer: {type: FooBar}",
        &[
            r#"platform.openstack.loadBalancer.type: Invalid value: "FooBar": invalid load balancer type"#,
        ],
    ),
    (
        "user-managed load balancer",
        "loadBalancer: {type: UserManaged}, apiVIPs: [10.0.0.5], ingressVIPs: [10.0.0.7]",
        &[],
    ),
    (
        "externalDNS names the list and carries all of it, once per bad entry",
        "externalDNS: [192.168.1.1, invalid, bad]",
        &[
            r#"platform.openstack.externalDNS: Invalid value: []string{"192.168.1.1", "invalid", "bad"}: "invalid" is not a valid IP"#,
            r#"platform.openstack.externalDNS: Invalid value: []string{"192.168.1.1", "invalid", "bad"}: "bad" is not a valid IP"#,
        ],
    ),
    ("valid externalDNS", "externalDNS: [192.168.1.1, 'fd00::1']", &[]),
    (
        "a bootstrap flavor of only whitespace",
        "bootstrapFlavor: '   '",
        &[
            r#"platform.openstack.bootstrapFlavor: Invalid value: "   ": bootstrapFlavor must not consist entirely of whitespace"#,
        ],
    ),
    ("a bootstrap flavor with inner spaces", "bootstrapFlavor: 'm1 large'", &[]),
    (
        "external DNS records need a user-managed load balancer",
        "dnsRecordsType: External",
        &[
            r#"platform.openstack.dnsRecordsType: Invalid value: "External": external DNS records can only be configured with user-managed loadbalancers"#,
        ],
    ),
    (
        "external DNS records with a user-managed load balancer",
        "dnsRecordsType: External, loadBalancer: {type: UserManaged}, apiVIPs: [10.0.0.5], ingressVIPs: [10.0.0.7]",
        &[],
    ),
    ("internal DNS records", "dnsRecordsType: Internal", &[]),
    (
        "controlPlanePort without fixed IPs",
        "controlPlanePort: {network: {name: net}}",
        &[
            "platform.openstack.controlPlanePort.fixedIPs: Required value: it is required to set a subnet filter to the controlPlanePort",
        ],
    ),
    (
        "controlPlanePort network and subnet IDs must be UUIDv4",
        "controlPlanePort: {network: {id: not-a-uuid}, fixedIPs: [{subnet: {id: 'c664df47-4f7e-1852-819e-e66f9882b7b3'}}]}",
        &[
            r#"platform.openstack.controlPlanePort.fixedIPs[0].subnet.id: Invalid value: "c664df47-4f7e-1852-819e-e66f9882b7b3": invalid subnet ID: must be a UUIDv4"#,
            r#"platform.openstack.controlPlanePort.network: Invalid value: "not-a-uuid": invalid network ID: must be a UUIDv4"#,
        ],
    ),
    (
        "a subnet filter needs an ID or a name",
        "controlPlanePort: {fixedIPs: [{subnet: {name: subnet-a}}, {subnet: {}}]}",
        &[
            "platform.openstack.controlPlanePort.fixedIPs[1].subnet: Required value: either ID or Name must be set on the subnet filter",
        ],
    ),
    (
        "at most two fixed IPs",
        "controlPlanePort: {fixedIPs: [{subnet: {name: a}}, {subnet: {name: b}}, {subnet: {name: c}}]}",
        &["platform.openstack.controlPlanePort.fixedIPs: Too many: 3: must have at most 2 items"],
    ),
    (
        "externalDNS is not supported with a controlPlanePort",
        "controlPlanePort: {network: {id: c664df47-4f7e-4852-819e-e66f9882b7b3}, fixedIPs: [{subnet: {name: a}}]}, externalDNS: [192.168.1.1]",
        &[
            r#"platform.openstack.externalDNS: Invalid value: []string{"192.168.1.1"}: externalDNS is set, externalDNS is not supported when ControlPlanePort is set"#,
        ],
    ),
    (
        "floating IPs need an external network",
        "apiFloatingIP: 128.35.27.8, ingressFloatingIP: 128.35.27.13",
        &[
            r#"platform.openstack.apiFloatingIP: Invalid value: "128.35.27.8": Cannot set floating ips when external network not specified"#,
            r#"platform.openstack.ingressFloatingIP: Invalid value: "128.35.27.13": Cannot set floating ips when external network not specified"#,
        ],
    ),
    (
        "the API and Ingress floating IPs must differ",
        "externalNetwork: ext, apiFloatingIP: 128.35.27.8, ingressFloatingIP: 128.35.27.8",
        &[
            r#"platform.openstack.ingressFloatingIP: Invalid value: "128.35.27.8": ingressFloatingIP can not be the same as apiFloatingIP"#,
        ],
    ),
    (
        "a clusterOSImage URL must be http(s) or file",
        "clusterOSImage: 'ftp://example.com/rhcos.qcow2'",
        &[
            r#"platform.openstack.clusterOSImage: Invalid value: "ftp://example.com/rhcos.qcow2": URL scheme should be either http(s) or file but it is 'ftp'"#,
        ],
    ),
    ("a clusterOSImage file URL", "clusterOSImage: 'file:///tmp/rhcos.qcow2'", &[]),
    ("a clusterOSImage Glance name", "clusterOSImage: rhcos-4.16", &[]),
    (
        "an unknown server group policy in the default machine platform",
        "defaultMachinePlatform: {serverGroupPolicy: random}",
        &[
            r#"platform.openstack.defaultMachinePlatform.serverGroupPolicy: Unsupported value: "random": supported values: "affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity""#,
        ],
    ),
    (
        "a known server group policy",
        "defaultMachinePlatform: {serverGroupPolicy: soft-anti-affinity}",
        &[],
    ),
];

#[test]
fn openstack_platform_rules_match_the_installer_messages() {
    for (what, body, expected) in PLATFORM_CASES {
        let rest = format!("platform:\n  openstack: {{{body}}}\n");
        assert_eq!(errors(&rest), *expected, "{what}");
    }
}

#[test]
fn machine_pools_name_their_own_path() {
    let rest = "controlPlane: {name: master, platform: {openstack: {serverGroupPolicy: soft-anti-affinity}}}\n\
                compute: [{name: worker, platform: {openstack: {serverGroupPolicy: spread}}}]\n\
                platform:\n  openstack: {}\n";
    assert_eq!(
        errors(rest),
        [
            r#"compute[0].platform.openstack.serverGroupPolicy: Unsupported value: "spread": supported values: "affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity""#
        ]
    );
}

#[test]
fn issue_27_a_router_id_is_a_uuid_and_the_cluster_network_one_per_family() {
    let router = "platform:\n  openstack: {routerID: 5e1f0c3a-7b2d-4c8e-9a6f-0d1e2f3a4b5c}\n";
    assert!(errors(router).is_empty(), "{:?}", errors(router));
    let named = "platform:\n  openstack: {routerID: ccm-router}\n";
    assert_eq!(
        errors(named),
        [
            r#"platform.openstack.routerID: Invalid value: "ccm-router": must be the ID (a UUID) of a Neutron router"#
        ]
    );
    let two = format!(
        "networking:\n  clusterNetwork: [{{cidr: 10.128.0.0/14, hostPrefix: 23}}, {{cidr: 10.140.0.0/14, hostPrefix: 23}}]\n{router}"
    );
    assert_eq!(
        errors(&two),
        [
            r#"networking.clusterNetwork: Invalid value: "10.128.0.0/14,10.140.0.0/14": with platform.openstack.routerID, at most one IPv4 and one IPv6 cluster network: the route controller's --cluster-cidr takes no more"#
        ]
    );
    let without = two.replace("{routerID: 5e1f0c3a-7b2d-4c8e-9a6f-0d1e2f3a4b5c}", "{}");
    assert!(errors(&without).is_empty(), "two cluster networks are fine without routes");
}
