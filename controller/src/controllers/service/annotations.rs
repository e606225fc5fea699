//! A Service's load-balancer settings: its `loadbalancer.openstack.org/*` annotations over the
//! `[LoadBalancer]` defaults (and its `[LoadBalancerClass]`), checked, typed, all errors at once.

use std::collections::BTreeMap;
use std::time::Duration;

pub(crate) use crate::config::{FloatingSubnet, LbClass as Class};

/// The upstream CCM's annotation prefix.
const PREFIX: &str = "loadbalancer.openstack.org/";
/// The annotation that names a Service's load balancer: upstream writes it on every Service it
/// manages; users set it to share one.
pub(crate) const LOAD_BALANCER_ID: &str = "loadbalancer.openstack.org/load-balancer-id";
/// The legacy internal-LB annotation the upstream CCM still reads.
pub(crate) const INTERNAL: &str = "service.beta.kubernetes.io/openstack-internal-load-balancer";

/// What an annotation does here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Support {
    /// Read and applied.
    Applied,
    /// Accepted, not applied; the reason goes into an Event and a log line.
    Ignored(&'static str),
    /// Written on the Service by a controller (upstream's CCM) as bookkeeping, not a setting a
    /// user gives: never read, and nothing to warn about.
    Written,
}

/// Every annotation the upstream CCM documents, and those of ours under its prefix, after the
/// prefix, and what this controller does with each (the controller README's table is this list).
pub(crate) const ANNOTATIONS: &[(&str, Support)] = &[
    ("class", Support::Applied),
    ("connection-limit", Support::Applied),
    ("floating-network-id", Support::Applied),
    ("floating-subnet", Support::Applied),
    ("floating-subnet-id", Support::Applied),
    ("floating-subnet-tags", Support::Applied),
    ("keep-floatingip", Support::Applied),
    ("port-id", Support::Applied),
    ("subnet-id", Support::Applied),
    ("network-id", Support::Applied),
    ("member-subnet-id", Support::Applied),
    ("lb-method", Support::Applied),
    ("flavor-id", Support::Applied),
    ("availability-zone", Support::Applied),
    ("enable-health-monitor", Support::Applied),
    ("health-monitor-delay", Support::Applied),
    ("health-monitor-timeout", Support::Applied),
    ("health-monitor-max-retries", Support::Applied),
    ("health-monitor-max-retries-down", Support::Applied),
    ("hostname", Support::Applied),
    // Ours: the global `enable-ingress-hostname` for one Service (upstream has only the key).
    ("enable-ingress-hostname", Support::Applied),
    ("load-balancer-id", Support::Applied),
    ("node-selector", Support::Applied),
    ("proxy-protocol", Support::Applied),
    ("timeout-client-data", Support::Applied),
    ("timeout-member-connect", Support::Applied),
    ("timeout-member-data", Support::Applied),
    ("timeout-tcp-inspect", Support::Applied),
    // Upstream's CCM writes the load balancer's address there; it stays after a takeover.
    ("load-balancer-address", Support::Written),
    (
        "x-forwarded-for",
        Support::Ignored(
            "needs HTTP listeners; this controller creates TCP/UDP/SCTP listeners only",
        ),
    ),
    (
        "default-tls-container-ref",
        Support::Ignored("TLS-terminated listeners need a key manager (Barbican); not supported"),
    ),
];

/// The `[LoadBalancer]` settings a Service may override, after its `[LoadBalancerClass]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Defaults {
    pub(crate) internal: bool,
    pub(crate) lb_method: String,
    pub(crate) create_monitor: bool,
    pub(crate) monitor: Monitor,
    pub(crate) subnet_id: Option<String>,
    pub(crate) network_id: Option<String>,
    pub(crate) member_subnet_id: Option<String>,
    pub(crate) floating_network_id: Option<String>,
    pub(crate) floating_subnet: FloatingSubnet,
    /// The Service's `[LoadBalancerClass]` set the floating subnet: annotations cannot change it.
    pub(crate) floating_subnet_by_class: bool,
    pub(crate) flavor_id: Option<String>,
    pub(crate) availability_zone: Option<String>,
    pub(crate) node_selector: BTreeMap<String, String>,
    /// `lb-provider` (upstream sends it on every create).
    pub(crate) provider: String,
    /// `enable-ingress-hostname`: a PROXY-protocol Service's ingress is `<ip>.<suffix>` (the
    /// Service's annotation of the same name overrides it).
    pub(crate) enable_ingress_hostname: bool,
    /// `ingress-hostname-suffix`: the `<suffix>`, for every Service.
    pub(crate) ingress_hostname_suffix: String,
}

impl Defaults {
    /// The `[LoadBalancer]` section as the defaults of every Service. The config checks refuse
    /// a `node-selector` pair that is not `key=value` (at start and on every live edit, with
    /// `selector_of`'s rule), so none reaches here.
    pub(crate) fn from_config(lb: &crate::config::LoadBalancer) -> Defaults {
        let mut errors = Vec::new();
        let mut read = Reader { annotations: &BTreeMap::new(), errors: &mut errors };
        let node_selector = match &lb.node_selector {
            Some(text) => read.selector_of("[LoadBalancer] node-selector", text),
            None => BTreeMap::new(),
        };
        debug_assert!(errors.is_empty(), "unchecked config: {errors:?}");
        Defaults {
            internal: lb.internal_lb,
            lb_method: lb.lb_method.clone(),
            create_monitor: lb.create_monitor,
            monitor: Monitor {
                delay: lb.monitor_delay,
                timeout: lb.monitor_timeout,
                max_retries: lb.monitor_max_retries,
                max_retries_down: lb.monitor_max_retries_down,
            },
            subnet_id: lb.subnet_id.clone(),
            network_id: lb.network_id.clone(),
            member_subnet_id: lb.member_subnet_id.clone(),
            floating_network_id: lb.floating_network_id.clone(),
            floating_subnet: lb.floating_subnet.clone(),
            floating_subnet_by_class: false,
            provider: lb.lb_provider.clone(),
            enable_ingress_hostname: lb.enable_ingress_hostname,
            ingress_hostname_suffix: lb.ingress_hostname_suffix.clone(),
            flavor_id: lb.flavor_id.clone(),
            availability_zone: lb.availability_zone.clone(),
            node_selector,
        }
    }
}

/// Health-monitor timing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Monitor {
    pub(crate) delay: Duration,
    pub(crate) timeout: Duration,
    pub(crate) max_retries: u32,
    pub(crate) max_retries_down: u32,
}

/// Listener timeouts in milliseconds (`None`: Octavia's default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Timeouts {
    pub(crate) client_data: Option<u64>,
    pub(crate) member_connect: Option<u64>,
    pub(crate) member_data: Option<u64>,
    pub(crate) tcp_inspect: Option<u64>,
}

/// Everything the controller needs to build one Service's load balancer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) internal: bool,
    pub(crate) class: Option<String>,
    /// -1: unlimited.
    pub(crate) connection_limit: i64,
    pub(crate) lb_method: String,
    /// `None`: no health monitor.
    pub(crate) monitor: Option<Monitor>,
    pub(crate) subnet_id: Option<String>,
    pub(crate) network_id: Option<String>,
    pub(crate) member_subnet_id: Option<String>,
    pub(crate) port_id: Option<String>,
    pub(crate) floating_network_id: Option<String>,
    pub(crate) floating_subnet: FloatingSubnet,
    pub(crate) keep_floating_ip: bool,
    pub(crate) flavor_id: Option<String>,
    pub(crate) availability_zone: Option<String>,
    pub(crate) hostname: Option<String>,
    /// `<suffix>` of a PROXY-protocol Service's `<ip>.<suffix>` ingress hostname.
    pub(crate) ingress_hostname_suffix: Option<String>,
    /// `lb-provider`.
    pub(crate) provider: String,
    pub(crate) load_balancer_id: Option<String>,
    pub(crate) node_selector: BTreeMap<String, String>,
    /// `PROXY` or `PROXYV2` pools instead of the listener's protocol.
    pub(crate) proxy_protocol: Option<&'static str>,
    pub(crate) timeouts: Timeouts,
    /// Annotations given but not applied, with why (for an Event).
    pub(crate) ignored: Vec<(String, &'static str)>,
}

/// The settings for a Service with `annotations`; every bad value is reported, naming its
/// annotation.
pub(crate) fn settings(
    annotations: &BTreeMap<String, String>,
    defaults: &Defaults,
    classes: &BTreeMap<String, Class>,
) -> Result<Settings, Vec<String>> {
    let mut errors = Vec::new();
    let mut read = Reader { annotations, errors: &mut errors };
    let class = read.text("class");
    let mut base = defaults.clone();
    if let Some(name) = &class {
        match classes.get(name) {
            Some(c) => apply_class(&mut base, c),
            None => read.errors.push(format!(
                "{PREFIX}class: no [LoadBalancerClass {name:?}] in the cloud config"
            )),
        }
    }
    let internal = match annotations.get(INTERNAL) {
        Some(v) => read.parse_bool(INTERNAL, v).unwrap_or(base.internal),
        None => base.internal,
    };
    let monitor_on = read.bool("enable-health-monitor").unwrap_or(base.create_monitor);
    let monitor = Monitor {
        delay: read.seconds("health-monitor-delay").unwrap_or(base.monitor.delay),
        timeout: read.seconds("health-monitor-timeout").unwrap_or(base.monitor.timeout),
        max_retries: read.number("health-monitor-max-retries").unwrap_or(base.monitor.max_retries),
        max_retries_down: read
            .number("health-monitor-max-retries-down")
            .unwrap_or(base.monitor.max_retries_down),
    };
    let (lb_method, source) = match read.text("lb-method") {
        Some(method) => (method, format!("{PREFIX}lb-method")),
        None => (base.lb_method.clone(), "[LoadBalancer] lb-method".to_owned()),
    };
    if !LB_METHODS.contains(&lb_method.as_str()) {
        read.errors
            .push(format!("{source}: {lb_method:?} is not one of {}", LB_METHODS.join(", ")));
    }
    let proxy_protocol = match read.text("proxy-protocol").as_deref() {
        None | Some("false") => None,
        Some("true" | "v1") => Some("PROXY"),
        Some("v2") => Some("PROXYV2"),
        Some(other) => {
            read.errors
                .push(format!("{PREFIX}proxy-protocol: {other:?} is not true, false, v1 or v2"));
            None
        }
    };
    let node_selector = match read.text("node-selector") {
        Some(text) => read.selector("node-selector", &text),
        None => base.node_selector.clone(),
    };
    let settings = Settings {
        internal,
        connection_limit: read.connection_limit(),
        lb_method,
        monitor: monitor_on.then_some(monitor),
        subnet_id: read.text("subnet-id").or(base.subnet_id),
        network_id: read.text("network-id").or(base.network_id),
        member_subnet_id: read.text("member-subnet-id").or(base.member_subnet_id),
        port_id: read.text("port-id"),
        floating_network_id: read.text("floating-network-id").or(base.floating_network_id),
        floating_subnet: floating_subnet(
            &mut read,
            base.floating_subnet,
            base.floating_subnet_by_class,
        ),
        keep_floating_ip: read.bool("keep-floatingip").unwrap_or(false),
        flavor_id: read.text("flavor-id").or(base.flavor_id),
        availability_zone: read.text("availability-zone").or(base.availability_zone),
        hostname: read.text("hostname"),
        ingress_hostname_suffix: read
            .bool("enable-ingress-hostname")
            .unwrap_or(base.enable_ingress_hostname)
            .then(|| base.ingress_hostname_suffix.clone()),
        provider: base.provider.clone(),
        load_balancer_id: read.text("load-balancer-id"),
        node_selector,
        proxy_protocol,
        timeouts: Timeouts {
            client_data: read.number("timeout-client-data").map(u64::from),
            member_connect: read.number("timeout-member-connect").map(u64::from),
            member_data: read.number("timeout-member-data").map(u64::from),
            tcp_inspect: read.number("timeout-tcp-inspect").map(u64::from),
        },
        ignored: ignored(annotations),
        class,
    };
    if errors.is_empty() { Ok(settings) } else { Err(errors) }
}

/// The settings to clean up with: [`settings`], or when the annotations are broken (they must
/// not keep a Service from going) the defaults with only the shared load balancer read.
pub(crate) fn settings_for_cleanup(
    annotations: &BTreeMap<String, String>,
    defaults: &Defaults,
    classes: &BTreeMap<String, Class>,
) -> Settings {
    settings(annotations, defaults, classes).unwrap_or_else(|_| {
        let read = Reader { annotations, errors: &mut Vec::new() };
        Settings { load_balancer_id: read.text("load-balancer-id"), ..Settings::default() }
    })
}

/// Octavia's `lb_algorithm` values.
const LB_METHODS: &[&str] = &["ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT"];

/// The floating subnet as upstream chooses it, each source as a whole: the class's if it sets
/// one, else the annotations' if any is given, else the config's. A bad pattern is an error.
fn floating_subnet(read: &mut Reader<'_>, base: FloatingSubnet, by_class: bool) -> FloatingSubnet {
    let given = FloatingSubnet {
        id: read.text("floating-subnet-id"),
        pattern: read.text("floating-subnet"),
        tags: read.text("floating-subnet-tags"),
    };
    let chosen = if by_class || !is_set(&given) { base } else { given };
    if let Err(error) = super::floating_subnet::Matcher::new(&chosen) {
        read.errors.push(error);
    }
    chosen
}

fn is_set(spec: &FloatingSubnet) -> bool {
    spec.id.is_some() || spec.pattern.is_some() || spec.tags.is_some()
}

fn apply_class(base: &mut Defaults, class: &Class) {
    let set = |target: &mut Option<String>, value: &Option<String>| {
        if value.is_some() {
            target.clone_from(value);
        }
    };
    set(&mut base.floating_network_id, &class.floating_network_id);
    if is_set(&class.floating_subnet) {
        base.floating_subnet.clone_from(&class.floating_subnet);
        base.floating_subnet_by_class = true;
    }
    set(&mut base.network_id, &class.network_id);
    set(&mut base.subnet_id, &class.subnet_id);
    set(&mut base.member_subnet_id, &class.member_subnet_id);
}

/// Our annotations that are known but not applied, and those we do not know at all (not
/// those a controller writes itself: a Service taken over carries them, and so every reconcile
/// would warn about them).
fn ignored(annotations: &BTreeMap<String, String>) -> Vec<(String, &'static str)> {
    let ours = annotations.keys().filter_map(|k| k.strip_prefix(PREFIX).map(|short| (k, short)));
    ours.filter_map(|(key, short)| match ANNOTATIONS.iter().find(|(name, _)| *name == short) {
        Some((_, Support::Applied | Support::Written)) => None,
        Some((_, Support::Ignored(why))) => Some((key.clone(), *why)),
        None => Some((key.clone(), "not an annotation of the OpenStack CCM")),
    })
    .collect()
}

struct Reader<'a> {
    annotations: &'a BTreeMap<String, String>,
    errors: &'a mut Vec<String>,
}

impl Reader<'_> {
    fn raw(&self, short: &str) -> Option<(String, String)> {
        let key = format!("{PREFIX}{short}");
        let value = self.annotations.get(&key)?.trim().to_owned();
        Some((key, value))
    }

    /// A non-empty text value (an empty annotation counts as unset, as upstream).
    fn text(&self, short: &str) -> Option<String> {
        self.raw(short).map(|(_, v)| v).filter(|v| !v.is_empty())
    }

    fn bool(&mut self, short: &str) -> Option<bool> {
        let (key, value) = self.raw(short)?;
        self.parse_bool(&key, &value)
    }

    fn parse_bool(&mut self, key: &str, value: &str) -> Option<bool> {
        match value {
            "true" | "True" | "TRUE" | "1" | "t" | "T" => Some(true),
            "false" | "False" | "FALSE" | "0" | "f" | "F" => Some(false),
            other => {
                self.errors.push(format!("{key}: {other:?} is not a boolean (true or false)"));
                None
            }
        }
    }

    fn number(&mut self, short: &str) -> Option<u32> {
        let (key, value) = self.raw(short)?;
        match value.parse() {
            Ok(n) => Some(n),
            Err(_) => {
                self.errors.push(format!("{key}: {value:?} is not a whole number ≥ 0"));
                None
            }
        }
    }

    /// Seconds, as the upstream annotations give them.
    fn seconds(&mut self, short: &str) -> Option<Duration> {
        self.number(short).map(|n| Duration::from_secs(u64::from(n)))
    }

    /// `connection-limit`: -1 (or absent) is unlimited.
    fn connection_limit(&mut self) -> i64 {
        let Some((key, value)) = self.raw("connection-limit") else { return -1 };
        match value.parse::<i64>() {
            Ok(n) if n >= -1 => n,
            _ => {
                self.errors.push(format!("{key}: {value:?} is not -1 or a whole number ≥ 0"));
                -1
            }
        }
    }

    /// `key=value,key2=value2`: every pair needs its `=`, as upstream.
    fn selector(&mut self, short: &str, text: &str) -> BTreeMap<String, String> {
        self.selector_of(&format!("{PREFIX}{short}"), text)
    }

    fn selector_of(&mut self, source: &str, text: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => {
                    out.insert(k.trim().to_owned(), v.trim().to_owned());
                }
                _ => self.errors.push(format!("{source}: {pair:?} is not key=value")),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
