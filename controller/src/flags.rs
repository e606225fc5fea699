//! Upstream OCCM flag names verbatim (`--cloud-config`, `--leader-elect=false`, `--v=2`), validated at start.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser};

use crate::controllers::ControllerName;

/// What the command line asked for. Parsing fails naming the flag on an unknown flag or bad value.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "openstack-cloud-controller-manager",
    version,
    about = "OpenStack cloud-controller-manager",
    subcommand_negates_reqs = true,
    args_conflicts_with_subcommands = true
)]
pub struct Flags {
    /// A one-shot command instead of the controller manager.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Cloud provider name; only `openstack`.
    #[arg(long = "cloud-provider", value_name = "NAME", value_parser = cloud_provider, required_unless_present = "check_config")]
    pub(crate) cloud_provider: Option<String>,

    /// Path to cloud.conf.
    #[arg(long = "cloud-config", value_name = "FILE")]
    pub cloud_config: Option<PathBuf>,

    /// Check the cloud config, print it with secrets redacted, exit 0 (valid) or 1.
    ///
    /// Makes no network call. Warnings and errors go to stderr, the effective cloud.conf to stdout.
    #[arg(long = "check-config")]
    pub check_config: bool,

    /// Path to a kubeconfig; default: in-cluster config.
    #[arg(long = "kubeconfig", value_name = "FILE")]
    pub(crate) kubeconfig: Option<PathBuf>,

    /// Controllers to run: `*` (all), `cloud-node`, `cloud-node-lifecycle`, `service`, `route`
    /// (or upstream's canonical names, `node-route-controller`…); `-name` disables one.
    #[arg(long = "controllers", value_name = "LIST", value_delimiter = ',', default_value = "*", value_parser = controller_selector)]
    pub(crate) controllers: Vec<ControllerSelector>,

    /// Elect a leader on a Lease before running controllers.
    #[arg(long = "leader-elect", value_name = "BOOL", default_value = "true", num_args = 0..=1, require_equals = true, default_missing_value = "true", action = ArgAction::Set, value_parser = go_bool)]
    pub(crate) leader_elect: bool,

    /// Lease duration for non-leaders.
    #[arg(long = "leader-elect-lease-duration", value_name = "DURATION", default_value = "15s", value_parser = go_duration)]
    pub(crate) leader_elect_lease_duration: Duration,

    /// How long the leader retries renewing before giving up.
    #[arg(long = "leader-elect-renew-deadline", value_name = "DURATION", default_value = "10s", value_parser = go_duration)]
    pub(crate) leader_elect_renew_deadline: Duration,

    /// Wait between acquire or renew attempts.
    #[arg(long = "leader-elect-retry-period", value_name = "DURATION", default_value = "2s", value_parser = go_duration)]
    pub(crate) leader_elect_retry_period: Duration,

    /// Namespace of the Lease.
    #[arg(
        long = "leader-elect-resource-namespace",
        value_name = "NS",
        default_value = "kube-system"
    )]
    pub(crate) leader_elect_resource_namespace: String,

    /// Name of the Lease.
    #[arg(
        long = "leader-elect-resource-name",
        value_name = "NAME",
        default_value = "cloud-controller-manager"
    )]
    pub(crate) leader_elect_resource_name: String,

    /// Leader migration (KEP-2436) from kube-controller-manager's in-tree provider: the
    /// migrated controllers (by default service, route and cloud-node-lifecycle) run only while
    /// this process also holds the migration lease, taken after the main one in the same
    /// namespace. Needs --leader-elect.
    #[arg(long = "enable-leader-migration", value_name = "BOOL", default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", action = ArgAction::Set, value_parser = go_bool)]
    pub(crate) enable_leader_migration: bool,

    /// The LeaderMigrationConfiguration (controllermanager.config.k8s.io/v1, decoded strictly);
    /// default: upstream's (lease cloud-provider-extraction-migration; route, service and
    /// cloud-node-lifecycle for any component). Only with --enable-leader-migration.
    #[arg(long = "leader-migration-config", value_name = "FILE")]
    pub(crate) leader_migration_config: Option<PathBuf>,

    /// Only `leases` is supported (accepted for compatibility).
    #[arg(long = "leader-elect-resource-lock", value_name = "KIND", default_value = "leases", value_parser = ["leases"])]
    pub(crate) leader_elect_resource_lock: String,

    /// Address of /healthz, /readyz and /metrics.
    #[arg(long = "bind-address", value_name = "IP", default_value = "0.0.0.0")]
    pub(crate) bind_address: IpAddr,

    /// HTTPS port of /healthz, /readyz and /metrics; 0 disables.
    #[arg(long = "secure-port", value_name = "PORT", default_value_t = 10258)]
    pub(crate) secure_port: u16,

    /// Paths served without a token, comma-separated (a trailing `*` matches any rest).
    ///
    /// Every other path needs a bearer token that the API server authenticates (TokenReview)
    /// and allows for that path (SubjectAccessReview, e.g. `get` on `/metrics`). Adding
    /// `/metrics` here serves the metrics to anyone, as upstream's controller managers do.
    #[arg(long = "authorization-always-allow-paths", value_name = "PATHS", value_delimiter = ',', default_value = "/healthz,/readyz,/livez", value_parser = allow_path)]
    pub(crate) authorization_always_allow_paths: Vec<String>,

    /// kubeconfig of the API server that authenticates the tokens of requests to the server
    /// (TokenReview); default: --kubeconfig, else the in-cluster config.
    #[arg(long = "authentication-kubeconfig", value_name = "FILE")]
    pub(crate) authentication_kubeconfig: Option<PathBuf>,

    /// kubeconfig of the API server that authorizes requests to the server
    /// (SubjectAccessReview); default: --kubeconfig, else the in-cluster config.
    #[arg(long = "authorization-kubeconfig", value_name = "FILE")]
    pub(crate) authorization_kubeconfig: Option<PathBuf>,

    /// Serving certificate (PEM); default: a self-signed one.
    #[arg(long = "tls-cert-file", value_name = "FILE", requires = "tls_private_key_file")]
    pub(crate) tls_cert_file: Option<PathBuf>,

    /// Serving key (PEM).
    #[arg(long = "tls-private-key-file", value_name = "FILE", requires = "tls_cert_file")]
    pub(crate) tls_private_key_file: Option<PathBuf>,

    /// Cluster name (accepted; used in logs).
    #[arg(long = "cluster-name", value_name = "NAME", default_value = "kubernetes")]
    pub(crate) cluster_name: String,

    /// Accepted for compatibility; this controller uses one client identity.
    #[arg(long = "use-service-account-credentials", value_name = "BOOL", default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", action = ArgAction::Set, value_parser = go_bool)]
    pub(crate) use_service_account_credentials: bool,

    /// Nodes initialized in parallel (upstream's default is 1; initialization waits on the
    /// network, not the CPU). The Kubernetes writes are still paced by --kube-api-qps.
    #[arg(long = "concurrent-node-syncs", value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) concurrent_node_syncs: u32,

    /// OpenStack requests in flight at once, all controllers together.
    ///
    /// With --openstack-requests-per-second, the one client-side limit that keeps a burst of
    /// Services reconciled in parallel from flooding Octavia and Neutron. A request answered 429
    /// or 503 is sent again after the answer's Retry-After, else a jittered backoff (1 s, 2 s,
    /// 4 s, 8 s).
    #[arg(long = "openstack-requests-in-flight", value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) openstack_requests_in_flight: u32,

    /// OpenStack requests a second, all controllers together (bursts of up to one second's
    /// worth); 0 leaves the rate to --openstack-requests-in-flight alone.
    ///
    /// Off by default: initializing 1,000 nodes takes 2,000 requests in well under a second
    /// against a fast cloud, and a rate limit would stretch that for no gain where the requests
    /// in flight are already bounded.
    #[arg(long = "openstack-requests-per-second", value_name = "N", default_value_t = 0)]
    pub(crate) openstack_requests_per_second: u32,

    /// Services whose load balancers are reconciled in parallel (two Services of one shared
    /// load balancer still take turns).
    ///
    /// 8 by default (upstream: 1, one Service at a time: 50 new Services waited up to 6 min
    /// for their load balancers). A sync makes one OpenStack request at a time, so 8 use at most
    /// half of --openstack-requests-in-flight and leave the rest to nodes and routes; against
    /// the test stack's Octavia, 16 created 50 load balancers no faster than 8 (BENCHMARKS.md).
    #[arg(long = "concurrent-service-syncs", value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) concurrent_service_syncs: u32,

    /// Period after which a converged Service's load balancer is checked again.
    ///
    /// While neither the Service, its nodes nor the load balancer changed, a check is one
    /// Octavia read; every 6th check reads the whole tree, floating IP and security group.
    #[arg(long = "load-balancer-resync-period", value_name = "DURATION", default_value = "10m", value_parser = go_duration)]
    pub(crate) load_balancer_resync_period: Duration,

    /// Period of the address refresh of all nodes (one server list per period).
    #[arg(long = "node-status-update-frequency", value_name = "DURATION", default_value = "5m", value_parser = go_duration)]
    pub(crate) node_status_update_frequency: Duration,

    /// Period of the lifecycle check of NotReady nodes.
    #[arg(long = "node-monitor-period", value_name = "DURATION", default_value = "5s", value_parser = go_duration)]
    pub(crate) node_monitor_period: Duration,

    /// Route the nodes' pod CIDRs through the `[Route] router-id` router.
    ///
    /// The route controller runs when this is true (upstream's default), `--controllers`
    /// includes `route` and cloud.conf names a router; without `router-id`, one warning.
    #[arg(long = "configure-cloud-routes", value_name = "BOOL", default_value = "true", num_args = 0..=1, require_equals = true, default_missing_value = "true", action = ArgAction::Set, value_parser = go_bool)]
    pub(crate) configure_cloud_routes: bool,

    /// The pod networks, comma-separated (one IPv4 and one IPv6 at most).
    ///
    /// Only routes whose destination lies inside them are ever removed from the router;
    /// without any, the route controller adds routes and never removes one.
    /// Example: --cluster-cidr=10.244.0.0/16,fd00:10:244::/56
    #[arg(long = "cluster-cidr", value_name = "CIDRS", value_parser = cluster_cidrs)]
    pub(crate) cluster_cidr: Option<ClusterCidrs>,

    /// Period of the route controller's resync (one router read while nothing changes).
    #[arg(long = "route-reconciliation-period", value_name = "DURATION", default_value = "10s", value_parser = go_duration)]
    pub(crate) route_reconciliation_period: Duration,

    /// Kubernetes API requests per second, on average.
    ///
    /// A client-side token bucket, as client-go's: every request to the API server takes a token;
    /// tokens refill at this rate up to --kube-api-burst. 0 means client-go's default (5); a
    /// negative value turns the limit off.
    #[arg(
        long = "kube-api-qps",
        value_name = "QPS",
        default_value_t = 20.0,
        allow_negative_numbers = true
    )]
    pub(crate) kube_api_qps: f32,

    /// Kubernetes API requests sent at once before --kube-api-qps paces them.
    ///
    /// The token bucket's size; 0 means client-go's default (10).
    #[arg(long = "kube-api-burst", value_name = "N", default_value_t = 30)]
    pub(crate) kube_api_burst: u32,

    /// Upstream flags this controller accepts and ignores (logged at start).
    #[command(flatten)]
    pub(crate) ignored: Ignored,

    /// Log verbosity (0–10); `RUST_LOG` overrides.
    #[arg(short = 'v', long = "v", value_name = "LEVEL", default_value_t = 0)]
    pub v: u8,
}

/// One-shot commands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Rename every Service's load balancer to the in-tree provider's name, or back.
    ///
    /// Before going back to kube-controller-manager's in-tree OpenStack provider, `--to in-tree`
    /// renames each load balancer this controller manages to `a<uid32>` (the only name the
    /// in-tree provider looks for), so that it finds the same load balancer, VIP and floating IP
    /// instead of making a second one. `--to external` renames them back (the controller also
    /// knows them under the in-tree name). The cluster name is read off our tags on the load
    /// balancers the Services' `load-balancer-id` annotations name. Prints one line per Service;
    /// exits 0 when every one went through; 1 otherwise (a shared load balancer, one that is
    /// not ACTIVE or not the Service's own, a Service with an address whose load balancer was
    /// not found); 2, changing nothing, when `--cluster-name` contradicts those tags or they
    /// name more than one cluster. Safe to run twice.
    MigrateLoadBalancers(crate::migrate::MigrateArgs),
    /// Delete everything the service controller made for one cluster in OpenStack.
    ///
    /// For tearing a cluster down (an installer's `destroy`, after the cluster's API is gone or
    /// before): every load balancer (with its listeners, pools and monitors), listener on
    /// someone else's load balancer (joined through `load-balancer-id`: the load balancer
    /// stays), floating IP, member security group (taken off the node ports first) and VIP port
    /// Octavia left behind that a controller made for cluster `--cluster-name`, whether or not its Service still
    /// exists. Objects are the cluster's by the service controller's ownership rule (our tags,
    /// upstream's CCM's names and descriptions); objects of another cluster and look-alikes
    /// without those marks are never touched (`--verbose` prints one line for each, saying
    /// why). Everything is read before anything changes. Prints one line per object; exits 0
    /// when everything is gone (or nothing was there), 1 when something could not be deleted
    /// (named, with the reason), 2 on bad input, before any change. Safe to run twice.
    Purge(crate::purge::PurgeArgs),
}

/// Flags that OpenShift's operator or the upstream manifests pass and that have no effect here
/// (no node IPAM, no profiling endpoint, no feature gates); accepted so the binary is a
/// drop-in, and each one given is named in a warning at start.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct Ignored {
    /// Accepted and ignored: pod CIDRs come from kube-controller-manager's node IPAM (this
    /// binary allocates none; its route controller reads `spec.podCIDRs`).
    #[arg(long = "allocate-node-cidrs", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub(crate) allocate_node_cidrs: Option<bool>,
    /// Accepted and ignored.
    #[arg(long = "feature-gates", value_name = "LIST")]
    pub(crate) feature_gates: Option<String>,
    /// Accepted and ignored (rustls uses its safe defaults).
    #[arg(long = "tls-cipher-suites", value_name = "LIST")]
    pub(crate) tls_cipher_suites: Option<String>,
    /// Accepted and ignored (rustls offers TLS 1.2 and 1.3).
    #[arg(long = "tls-min-version", value_name = "VERSION")]
    pub(crate) tls_min_version: Option<String>,
    /// Accepted and ignored (address refresh is one batch).
    #[arg(long = "concurrent-node-status-updates", value_name = "N", value_parser = clap::value_parser!(u32))]
    pub(crate) concurrent_node_status_updates: Option<u32>,
    /// Accepted and ignored.
    #[arg(long = "min-resync-period", value_name = "DURATION", value_parser = go_duration)]
    pub(crate) min_resync_period: Option<Duration>,
    /// Accepted and ignored (no profiling endpoint).
    #[arg(long = "profiling", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub(crate) profiling: Option<bool>,
}

impl Ignored {
    /// The names of the ignored flags that were given.
    pub(crate) fn given(&self) -> Vec<&'static str> {
        let Self {
            allocate_node_cidrs,
            feature_gates,
            tls_cipher_suites,
            tls_min_version,
            concurrent_node_status_updates,
            min_resync_period,
            profiling,
        } = self;
        [
            ("--allocate-node-cidrs", allocate_node_cidrs.is_some()),
            ("--feature-gates", feature_gates.is_some()),
            ("--tls-cipher-suites", tls_cipher_suites.is_some()),
            ("--tls-min-version", tls_min_version.is_some()),
            ("--concurrent-node-status-updates", concurrent_node_status_updates.is_some()),
            ("--min-resync-period", min_resync_period.is_some()),
            ("--profiling", profiling.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }
}

/// One item of `--controllers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ControllerSelector {
    /// `*`: the default controllers.
    All,
    /// `name`: enable it.
    Enable(ControllerName),
    /// `-name`: disable it.
    Disable(ControllerName),
}

/// Which controllers run, resolved from `--controllers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Controllers {
    /// `cloud-node`.
    pub(crate) node: bool,
    /// `cloud-node-lifecycle`.
    pub(crate) lifecycle: bool,
    /// `service` (load balancers).
    pub(crate) service: bool,
    /// `route` (pod CIDRs on a Neutron router).
    pub(crate) route: bool,
}

impl Flags {
    /// Resolves `--controllers` as upstream: `*` enables the defaults, `-name` disables, a name enables.
    pub(crate) fn controllers(&self) -> Controllers {
        let star = self.controllers.contains(&ControllerSelector::All);
        let pick = |name: ControllerName| {
            let on = self.controllers.contains(&ControllerSelector::Enable(name));
            let off = self.controllers.contains(&ControllerSelector::Disable(name));
            !off && (on || star)
        };
        Controllers {
            node: pick(ControllerName::CloudNode),
            lifecycle: pick(ControllerName::CloudNodeLifecycle),
            service: pick(ControllerName::Service),
            route: pick(ControllerName::Route),
        }
    }
}

/// `--cluster-cidr`: the pod networks, at most one per family (upstream's rule).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ClusterCidrs(pub(crate) Vec<ipnet::IpNet>);

fn cluster_cidrs(value: &str) -> Result<ClusterCidrs, String> {
    let mut cidrs: Vec<ipnet::IpNet> = Vec::new();
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let cidr: ipnet::IpNet =
            item.parse().map_err(|e| format!("{item:?} is not a CIDR: {e}"))?;
        if cidr.trunc() != cidr {
            return Err(format!("{item:?} has host bits set (the network is {})", cidr.trunc()));
        }
        let family = |c: &ipnet::IpNet| matches!(c, ipnet::IpNet::V4(_));
        if cidrs.iter().any(|c| family(c) == family(&cidr)) {
            return Err(format!(
                "{value:?} names two networks of one family; at most one IPv4 and one IPv6"
            ));
        }
        cidrs.push(cidr);
    }
    Ok(ClusterCidrs(cidrs))
}

/// One item of `--authorization-always-allow-paths`: a path, or a prefix ending in `*` (the
/// only place a `*` may stand, as upstream's rule); an empty item is dropped at use.
fn allow_path(value: &str) -> Result<String, String> {
    let value = value.trim();
    match value.find('*') {
        Some(at) if at + 1 != value.len() => {
            Err(format!("{value:?}: a `*` may only end a path (a prefix)"))
        }
        _ => Ok(value.to_owned()),
    }
}

fn cloud_provider(value: &str) -> Result<String, String> {
    if value == "openstack" {
        Ok(value.to_owned())
    } else {
        Err(format!("only \"openstack\" is supported, not {value:?}"))
    }
}

fn controller_selector(value: &str) -> Result<ControllerSelector, String> {
    if value == "*" {
        return Ok(ControllerSelector::All);
    }
    let (disable, name) = match value.strip_prefix('-') {
        Some(name) => (true, name),
        None => (false, value),
    };
    match name.parse::<ControllerName>() {
        Ok(name) if disable => Ok(ControllerSelector::Disable(name)),
        Ok(name) => Ok(ControllerSelector::Enable(name)),
        Err(_) => {
            let known: Vec<&str> = ControllerName::ALL.iter().map(|n| n.as_str()).collect();
            Err(format!("unknown controller {value:?} (known: *, {})", known.join(", ")))
        }
    }
}

fn go_bool(value: &str) -> Result<bool, String> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(format!("{value:?} is not a boolean")),
    }
}

fn go_duration(value: &str) -> Result<Duration, String> {
    crate::duration::parse(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Flags, clap::Error> {
        let mut argv = vec!["occm"];
        argv.extend_from_slice(args);
        Flags::try_parse_from(argv)
    }

    #[test]
    fn defaults_match_upstream() {
        let f = parse(&["--cloud-provider=openstack"]).unwrap();
        assert!(f.leader_elect);
        assert_eq!(f.leader_elect_lease_duration, Duration::from_secs(15));
        assert_eq!(f.leader_elect_renew_deadline, Duration::from_secs(10));
        assert_eq!(f.leader_elect_retry_period, Duration::from_secs(2));
        assert_eq!(f.leader_elect_resource_namespace, "kube-system");
        assert_eq!(f.leader_elect_resource_name, "cloud-controller-manager");
        assert_eq!(f.secure_port, 10258);
        assert_eq!(f.bind_address.to_string(), "0.0.0.0");
        assert_eq!(f.node_status_update_frequency, Duration::from_secs(300));
        assert_eq!(f.node_monitor_period, Duration::from_secs(5));
        // Not upstream's 1: four nodes initialized at a time (README, "Flags").
        assert_eq!(f.concurrent_node_syncs, 4);
        let all = Controllers { node: true, lifecycle: true, service: true, route: true };
        assert_eq!(f.controllers(), all);
        assert_eq!((f.kube_api_qps, f.kube_api_burst), (20.0, 30));
        // Upstream's: routes on, reconciled every 10 s; no pod network named.
        assert!(f.configure_cloud_routes && f.cluster_cidr.is_none());
        assert_eq!(f.route_reconciliation_period, Duration::from_secs(10));
        let off = parse(&["--cloud-provider=openstack", "--kube-api-qps", "-1"]).unwrap();
        assert_eq!(off.kube_api_qps, -1.0);
    }

    #[test]
    fn go_style_values_are_accepted() {
        let f = parse(&[
            "--cloud-provider=openstack",
            "--leader-elect=false",
            "--use-service-account-credentials",
            "--v=2",
            "--controllers=*,-cloud-node-lifecycle",
            "--node-monitor-period=1m30s",
        ])
        .unwrap();
        assert!(!f.leader_elect);
        assert!(f.use_service_account_credentials);
        assert_eq!(f.v, 2);
        let want = Controllers { node: true, lifecycle: false, service: true, route: true };
        assert_eq!(f.controllers(), want);
        assert_eq!(f.node_monitor_period, Duration::from_secs(90));
        assert_eq!(parse(&["--cloud-provider=openstack", "-v", "4"]).unwrap().v, 4);
    }

    #[test]
    fn unknown_flag_and_bad_values_name_the_flag() {
        let err = parse(&["--cloud-provider=openstack", "--no-such-flag"]).unwrap_err().to_string();
        assert!(err.contains("--no-such-flag"), "{err}");
        let err = parse(&["--cloud-provider=openstack", "--node-monitor-period=5"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--node-monitor-period") && err.contains("missing unit"), "{err}");
        let err = parse(&["--cloud-provider=aws"]).unwrap_err().to_string();
        assert!(err.contains("--cloud-provider"), "{err}");
        let err = parse(&["--cloud-provider=openstack", "--controllers=cloud-nod"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--controllers") && err.contains("cloud-nod"), "{err}");
        let err =
            parse(&["--cloud-provider=openstack", "--leader-elect=maybe"]).unwrap_err().to_string();
        assert!(err.contains("--leader-elect"), "{err}");
        assert!(parse(&[]).is_err(), "--cloud-provider is required");
        assert!(parse(&["--check-config"]).is_ok());
    }

    #[test]
    fn openshift_operator_flags_are_accepted_and_reported_as_ignored() {
        let f = parse(&[
            "--cloud-provider=openstack",
            "--configure-cloud-routes=false",
            "--use-service-account-credentials=true",
            "--feature-gates=CloudDualStackNodeIPs=true",
            "--tls-min-version=VersionTLS12",
            "--leader-elect-lease-duration=137s",
            "--secure-port=0",
        ])
        .unwrap();
        assert_eq!(f.ignored.given(), ["--feature-gates", "--tls-min-version"]);
        assert!(!f.configure_cloud_routes, "OpenShift turns the route controller off");
        assert_eq!(f.secure_port, 0);
    }

    #[test]
    fn delegated_authorization_flags_default_as_upstream_and_are_no_longer_ignored() {
        let f = parse(&["--cloud-provider=openstack"]).unwrap();
        assert_eq!(f.authorization_always_allow_paths, ["/healthz", "/readyz", "/livez"]);
        assert!(f.authentication_kubeconfig.is_none() && f.authorization_kubeconfig.is_none());
        let f = parse(&[
            "--cloud-provider=openstack",
            "--authorization-always-allow-paths=/healthz,/metrics*",
            "--authentication-kubeconfig=/etc/authn",
            "--authorization-kubeconfig=/etc/authz",
        ])
        .unwrap();
        assert_eq!(f.authorization_always_allow_paths, ["/healthz", "/metrics*"]);
        assert_eq!(f.authentication_kubeconfig.unwrap(), PathBuf::from("/etc/authn"));
        assert_eq!(f.authorization_kubeconfig.unwrap(), PathBuf::from("/etc/authz"));
        assert!(f.ignored.given().is_empty());
        let err = parse(&["--cloud-provider=openstack", "--authorization-always-allow-paths=/*/x"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--authorization-always-allow-paths"), "{err}");
    }

    #[test]
    fn leader_migration_is_off_by_default_and_takes_a_file() {
        let f = parse(&["--cloud-provider=openstack"]).unwrap();
        assert!(!f.enable_leader_migration && f.leader_migration_config.is_none());
        let f = parse(&[
            "--cloud-provider=openstack",
            "--enable-leader-migration",
            "--leader-migration-config=/etc/m.yaml",
        ])
        .unwrap();
        assert!(f.enable_leader_migration);
        assert_eq!(f.leader_migration_config.as_deref(), Some(std::path::Path::new("/etc/m.yaml")));
    }

    #[test]
    fn only_named_controllers_run_without_star() {
        let f = parse(&["--cloud-provider=openstack", "--controllers=cloud-node,route"]).unwrap();
        let want = Controllers { node: true, lifecycle: false, service: false, route: true };
        assert_eq!(f.controllers(), want);
        let f = parse(&["--cloud-provider=openstack", "--controllers=node-route-controller"]);
        assert!(f.unwrap().controllers().route, "upstream's canonical name");
        let f = parse(&["--cloud-provider=openstack", "--controllers=*,-node-route-controller"]);
        assert!(!f.unwrap().controllers().route);
    }

    #[test]
    fn cluster_cidrs_take_one_network_per_family_and_name_the_flag_otherwise() {
        let f = parse(&[
            "--cloud-provider=openstack",
            "--cluster-cidr=10.244.0.0/16, fd00:10:244::/56",
        ])
        .unwrap();
        let want: Vec<ipnet::IpNet> =
            vec!["10.244.0.0/16".parse().unwrap(), "fd00:10:244::/56".parse().unwrap()];
        assert_eq!(f.cluster_cidr, Some(ClusterCidrs(want)));
        for bad in ["10.244.0.0/16,10.245.0.0/16", "10.244.0.1/16", "ten/8"] {
            let err = parse(&["--cloud-provider=openstack", &format!("--cluster-cidr={bad}")])
                .unwrap_err()
                .to_string();
            assert!(err.contains("--cluster-cidr"), "{bad}: {err}");
        }
        let f = parse(&["--cloud-provider=openstack", "--route-reconciliation-period=1m"]).unwrap();
        assert_eq!(f.route_reconciliation_period, Duration::from_secs(60));
    }

    #[test]
    fn the_service_controller_is_part_of_star_and_can_be_left_out() {
        let f = parse(&["--cloud-provider=openstack", "--controllers=*,service"]).unwrap();
        assert!(f.controllers().service);
        let f = parse(&["--cloud-provider=openstack", "--controllers=*,-service"]).unwrap();
        assert!(!f.controllers().service);
        let f = parse(&["--cloud-provider=openstack", "--controllers=service,-service"]).unwrap();
        assert!(!f.controllers().service);
    }
}
