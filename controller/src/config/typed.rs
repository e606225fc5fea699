//! The typed sections, built from checked [`Values`] with upstream defaults.

use std::collections::BTreeMap;
use std::time::Duration;

use secrecy::SecretString;

use super::{Values, parse_bool};

/// The whole cloud.conf.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// `[Global]`.
    pub(crate) global: Global,
    /// `[Networking]`.
    pub(crate) networking: Networking,
    /// `[LoadBalancer]`: the service controller's defaults.
    pub(crate) load_balancer: LoadBalancer,
    /// `[LoadBalancerClass "name"]` by name.
    pub(crate) lb_classes: BTreeMap<String, LbClass>,
    /// `[Metadata]`.
    pub(crate) metadata: Metadata,
    /// `[Route]`.
    pub(crate) route: Route,
}

pub use ccm_openstack_auth::{Credentials, Interface as EndpointInterface};

/// `[Global]`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Global {
    /// Credentials and endpoint selection.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "the running cloud takes them from the reload or Secret watch")
    )]
    pub(crate) credentials: Credentials,
    /// `secret-name`.
    pub(crate) secret_name: Option<String>,
    /// `secret-namespace`.
    pub(crate) secret_namespace: Option<String>,
}

/// `[Networking]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Networking {
    /// `ipv6-support-disabled`.
    pub(crate) ipv6_support_disabled: bool,
    /// `public-network-name` (repeatable).
    pub(crate) public_network_names: Vec<String>,
    /// `internal-network-name` (repeatable).
    pub(crate) internal_network_names: Vec<String>,
    /// `address-sort-order`, valid CIDRs only.
    pub(crate) address_sort_order: Vec<ipnet::IpNet>,
}

/// `[LoadBalancer]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoadBalancer {
    /// `enabled`.
    pub(crate) enabled: bool,
    /// `floating-network-id`.
    pub(crate) floating_network_id: Option<String>,
    /// `subnet-id`.
    pub(crate) subnet_id: Option<String>,
    /// `network-id`.
    pub(crate) network_id: Option<String>,
    /// `lb-method`.
    pub(crate) lb_method: String,
    /// `lb-provider`.
    pub(crate) lb_provider: String,
    /// `create-monitor`.
    pub(crate) create_monitor: bool,
    /// `monitor-delay`.
    pub(crate) monitor_delay: Duration,
    /// `monitor-timeout`.
    pub(crate) monitor_timeout: Duration,
    /// `monitor-max-retries`.
    pub(crate) monitor_max_retries: u32,
    /// `monitor-max-retries-down`.
    pub(crate) monitor_max_retries_down: u32,
    /// `manage-security-groups`.
    pub(crate) manage_security_groups: bool,
    /// `internal-lb`.
    pub(crate) internal_lb: bool,
    /// `cascade-delete`.
    pub(crate) cascade_delete: bool,
    /// `max-shared-lb`.
    pub(crate) max_shared_lb: i64,
    /// `member-subnet-id`.
    pub(crate) member_subnet_id: Option<String>,
    /// `floating-subnet-id`, `floating-subnet`, `floating-subnet-tags`.
    pub(crate) floating_subnet: FloatingSubnet,
    /// `flavor-id`.
    pub(crate) flavor_id: Option<String>,
    /// `availability-zone`.
    pub(crate) availability_zone: Option<String>,
    /// `node-selector` (`key=value,…`, checked by the service controller).
    pub(crate) node_selector: Option<String>,
    /// `provider-requires-serial-api-calls`.
    pub(crate) serial_api_calls: bool,
    /// `enable-ingress-hostname`.
    pub(crate) enable_ingress_hostname: bool,
    /// `ingress-hostname-suffix`.
    pub(crate) ingress_hostname_suffix: String,
}

/// Which subnet of the floating network a floating IP comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FloatingSubnet {
    /// `floating-subnet-id`.
    pub(crate) id: Option<String>,
    /// `floating-subnet`.
    pub(crate) pattern: Option<String>,
    /// `floating-subnet-tags`.
    pub(crate) tags: Option<String>,
}

/// `[LoadBalancerClass "name"]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LbClass {
    /// `floating-network-id`.
    pub(crate) floating_network_id: Option<String>,
    /// `floating-subnet-id`, `floating-subnet`, `floating-subnet-tags`.
    pub(crate) floating_subnet: FloatingSubnet,
    /// `network-id`.
    pub(crate) network_id: Option<String>,
    /// `subnet-id`.
    pub(crate) subnet_id: Option<String>,
    /// `member-subnet-id`.
    pub(crate) member_subnet_id: Option<String>,
}

/// `[Metadata]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Metadata {
    /// `search-order`.
    pub(crate) search_order: Vec<String>,
    /// `request-timeout`: the HTTP timeout of every OpenStack call, as upstream.
    pub(crate) request_timeout: Duration,
}

/// `[Route]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Route {
    /// `router-id`.
    pub(crate) router_id: Option<String>,
}

/// Validates `search-order`: at most two of `configDrive`, `metadataService`.
pub(crate) fn search_order(text: &str) -> Result<Vec<String>, String> {
    let items: Vec<String> =
        text.split(',').map(|i| i.trim().to_owned()).filter(|i| !i.is_empty()).collect();
    if items.is_empty() || items.len() > 2 {
        return Err("must list one or two of configDrive, metadataService".to_owned());
    }
    for item in &items {
        if item != "configDrive" && item != "metadataService" {
            return Err(format!("has {item:?}; allowed are configDrive, metadataService"));
        }
    }
    Ok(items)
}

fn text(values: &Values, section: &str, key: &'static str) -> Option<String> {
    values.get(section, key).filter(|v| !v.is_empty()).map(str::to_owned)
}

fn secret(values: &Values, key: &'static str) -> Option<SecretString> {
    text(values, "Global", key).map(SecretString::from)
}

fn flag(values: &Values, section: &str, key: &'static str, default: bool) -> bool {
    values.get(section, key).and_then(parse_bool).unwrap_or(default)
}

fn duration(values: &Values, section: &str, key: &'static str, default: u64) -> Duration {
    let parsed = values.get(section, key).and_then(|v| crate::duration::parse(v).ok());
    parsed.unwrap_or(Duration::from_secs(default))
}

fn number<T: std::str::FromStr>(
    values: &Values,
    section: &str,
    key: &'static str,
    default: T,
) -> T {
    values.get(section, key).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The credential keys of `[Global]`.
pub fn credentials(v: &Values) -> Credentials {
    Credentials {
        auth_url: text(v, "Global", "auth-url"),
        user_id: text(v, "Global", "user-id"),
        username: text(v, "Global", "username"),
        password: secret(v, "password"),
        project_id: text(v, "Global", "tenant-id"),
        project_name: text(v, "Global", "tenant-name"),
        domain_id: text(v, "Global", "domain-id"),
        domain_name: text(v, "Global", "domain-name"),
        project_domain_id: text(v, "Global", "tenant-domain-id"),
        project_domain_name: text(v, "Global", "tenant-domain-name"),
        user_domain_id: text(v, "Global", "user-domain-id"),
        user_domain_name: text(v, "Global", "user-domain-name"),
        token: secret(v, "token"),
        application_credential_id: text(v, "Global", "application-credential-id"),
        application_credential_name: text(v, "Global", "application-credential-name"),
        application_credential_secret: secret(v, "application-credential-secret"),
        trust_id: text(v, "Global", "trust-id"),
        region: text(v, "Global", "region"),
        interface: v
            .get("Global", "os-endpoint-type")
            .and_then(EndpointInterface::parse)
            .unwrap_or_default(),
        ca_file: text(v, "Global", "ca-file"),
        ca_bundle: None,
        cert_file: text(v, "Global", "cert-file"),
        key_file: text(v, "Global", "key-file"),
        tls_insecure: flag(v, "Global", "tls-insecure", false),
        ..Credentials::default()
    }
}

impl Config {
    /// The typed view of checked values; unset keys take upstream defaults.
    pub(crate) fn from_values(v: &Values) -> Self {
        let lb_classes = v
            .classes()
            .into_iter()
            .map(|name| {
                let get =
                    |key| v.class_get(&name, key).filter(|s| !s.is_empty()).map(str::to_owned);
                let class = LbClass {
                    floating_network_id: get("floating-network-id"),
                    floating_subnet: FloatingSubnet {
                        id: get("floating-subnet-id"),
                        pattern: get("floating-subnet"),
                        tags: get("floating-subnet-tags"),
                    },
                    network_id: get("network-id"),
                    subnet_id: get("subnet-id"),
                    member_subnet_id: get("member-subnet-id"),
                };
                (name, class)
            })
            .collect();
        Config {
            global: Global {
                credentials: credentials(v),
                secret_name: text(v, "Global", "secret-name"),
                secret_namespace: text(v, "Global", "secret-namespace"),
            },
            networking: Networking {
                ipv6_support_disabled: flag(v, "Networking", "ipv6-support-disabled", false),
                public_network_names: v.all("Networking", "public-network-name").to_vec(),
                internal_network_names: v.all("Networking", "internal-network-name").to_vec(),
                address_sort_order: v
                    .get("Networking", "address-sort-order")
                    .unwrap_or_default()
                    .split(',')
                    .filter_map(|i| i.trim().parse().ok())
                    .collect(),
            },
            load_balancer: LoadBalancer {
                enabled: flag(v, "LoadBalancer", "enabled", true),
                floating_network_id: text(v, "LoadBalancer", "floating-network-id"),
                subnet_id: text(v, "LoadBalancer", "subnet-id"),
                network_id: text(v, "LoadBalancer", "network-id"),
                lb_method: text(v, "LoadBalancer", "lb-method")
                    .unwrap_or_else(|| "ROUND_ROBIN".into()),
                lb_provider: text(v, "LoadBalancer", "lb-provider")
                    .unwrap_or_else(|| "amphora".into()),
                create_monitor: flag(v, "LoadBalancer", "create-monitor", false),
                monitor_delay: duration(v, "LoadBalancer", "monitor-delay", 5),
                monitor_timeout: duration(v, "LoadBalancer", "monitor-timeout", 3),
                monitor_max_retries: number(v, "LoadBalancer", "monitor-max-retries", 1),
                monitor_max_retries_down: number(v, "LoadBalancer", "monitor-max-retries-down", 3),
                manage_security_groups: flag(v, "LoadBalancer", "manage-security-groups", false),
                internal_lb: flag(v, "LoadBalancer", "internal-lb", false),
                cascade_delete: flag(v, "LoadBalancer", "cascade-delete", true),
                max_shared_lb: number(v, "LoadBalancer", "max-shared-lb", 2),
                member_subnet_id: text(v, "LoadBalancer", "member-subnet-id"),
                floating_subnet: FloatingSubnet {
                    id: text(v, "LoadBalancer", "floating-subnet-id"),
                    pattern: text(v, "LoadBalancer", "floating-subnet"),
                    tags: text(v, "LoadBalancer", "floating-subnet-tags"),
                },
                flavor_id: text(v, "LoadBalancer", "flavor-id"),
                availability_zone: text(v, "LoadBalancer", "availability-zone"),
                node_selector: text(v, "LoadBalancer", "node-selector"),
                enable_ingress_hostname: flag(v, "LoadBalancer", "enable-ingress-hostname", false),
                ingress_hostname_suffix: text(v, "LoadBalancer", "ingress-hostname-suffix")
                    .unwrap_or_else(|| "nip.io".into()),
                serial_api_calls: flag(
                    v,
                    "LoadBalancer",
                    "provider-requires-serial-api-calls",
                    false,
                ),
            },
            lb_classes,
            metadata: Metadata {
                search_order: v
                    .get("Metadata", "search-order")
                    .and_then(|o| search_order(o).ok())
                    .unwrap_or_else(|| vec!["configDrive".into(), "metadataService".into()]),
                request_timeout: duration(v, "Metadata", "request-timeout", 60),
            },
            route: Route { router_id: text(v, "Route", "router-id") },
        }
    }
}
