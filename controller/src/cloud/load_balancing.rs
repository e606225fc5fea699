//! The `LoadBalancing` trait: the OpenStack surface the service controller sees (Octavia, and
//! Neutron's floating IPs), and its implementation on the shared, counted session.

use std::future::Future;

use serde_json::{Value, json};

use super::floating_ips::{self, FloatingIp, FloatingIpSpec, NamedSubnet};
use super::neutron::{OwnedPort, Port};
use super::octavia::{self, Change, LoadBalancer, LoadBalancerSpec, Tree};
use super::revision::{Written, stale_to_written};
use super::security_groups::SecurityGroups;
use super::{OpenStack, Result};

/// The metrics' service label of Octavia calls.
const SERVICE: &str = "load-balancer";

/// Octavia's load balancers: what the calls that change one need (`changes`, the waits).
pub(crate) trait Octavia: Send + Sync + 'static {
    /// Load balancers with exactly this name.
    fn load_balancers_named(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Vec<LoadBalancer>>> + Send;
    /// One load balancer.
    fn load_balancer(&self, id: &str) -> impl Future<Output = Result<LoadBalancer>> + Send;
    /// Every load balancer of a project: one list answers all the waits at once (`wait`).
    fn load_balancers_of(
        &self,
        project_id: &str,
    ) -> impl Future<Output = Result<Vec<LoadBalancer>>> + Send;
    /// Its listeners, pools, members and monitors.
    fn tree(&self, load_balancer: LoadBalancer) -> impl Future<Output = Result<Tree>> + Send;
    /// A fully-populated create.
    fn create(&self, spec: &LoadBalancerSpec) -> impl Future<Output = Result<LoadBalancer>> + Send;
    /// One change to the tree (one call): the ID of what it created, if anything.
    fn change(
        &self,
        load_balancer_id: &str,
        change: &Change,
    ) -> impl Future<Output = Result<Option<String>>> + Send;
    /// Deletes it with everything under it.
    fn delete(&self, id: &str) -> impl Future<Output = Result<()>> + Send;
}

/// What the service controller needs from OpenStack: Octavia, Neutron's floating IPs, ports
/// and security groups.
pub(crate) trait LoadBalancing: Octavia + SecurityGroups + Send + Sync + 'static {
    /// Whether the catalog has a load-balancer (Octavia) endpoint.
    fn has_load_balancer(&self) -> impl Future<Output = Result<bool>> + Send;
    /// Floating IPs matching a Neutron filter.
    fn floating_ips(
        &self,
        filter: &[(&'static str, String)],
    ) -> impl Future<Output = Result<Vec<FloatingIp>>> + Send;
    /// Allocates a floating IP on a port, tagged.
    fn create_floating_ip(
        &self,
        spec: &FloatingIpSpec,
        tags: &[String],
    ) -> impl Future<Output = Result<FloatingIp>> + Send;
    /// Attaches a floating IP to a port, or detaches it (`None`), guarded by `revision` when
    /// given.
    fn set_floating_ip_port(
        &self,
        id: &str,
        port_id: Option<&str>,
        revision: Option<u64>,
    ) -> impl Future<Output = Result<Written<()>>> + Send;
    /// Describes a floating IP (one adopted with its load balancer), guarded by `revision` when
    /// given.
    fn describe_floating_ip(
        &self,
        id: &str,
        description: &str,
        revision: Option<u64>,
    ) -> impl Future<Output = Result<Written<()>>> + Send;
    /// Adds `tags` to a floating IP, one call each (`PUT …/tags/{tag}`): a tag someone else
    /// writes meanwhile is kept.
    fn add_floating_ip_tags(
        &self,
        id: &str,
        tags: &[String],
    ) -> impl Future<Output = Result<()>> + Send;
    /// The subnets of a floating network, narrowed by a Neutron tag filter.
    fn floating_subnets(
        &self,
        network_id: &str,
        tag_filter: Option<(&'static str, String)>,
    ) -> impl Future<Output = Result<Vec<NamedSubnet>>> + Send;
    /// Releases a floating IP.
    fn delete_floating_ip(&self, id: &str) -> impl Future<Output = Result<()>> + Send;
    /// The ports named exactly `name` (a VIP port Octavia left: `octavia-lb-<id>`).
    fn ports_named(&self, name: &str) -> impl Future<Output = Result<Vec<OwnedPort>>> + Send;
    /// Deletes a port.
    fn delete_port(&self, id: &str) -> impl Future<Output = Result<()>> + Send;
    /// The subnets of the ports holding fixed IP `address` (a node's), sorted: more than one
    /// when two networks use the same addresses.
    fn subnets_of(&self, address: &str) -> impl Future<Output = Result<Vec<String>>> + Send;
    /// The subnet of fixed IP `address` on a port of server `server_id` (a node's, by its
    /// providerID), if any: unlike [`LoadBalancing::subnets_of`], one answer when two networks
    /// use the same addresses.
    fn subnet_of_server(
        &self,
        server_id: &str,
        address: &str,
    ) -> impl Future<Output = Result<Option<String>>> + Send;
    /// The ports with a fixed IP on `subnet_id` (the members' own ports on the member subnet).
    fn ports_on_subnet(&self, subnet_id: &str) -> impl Future<Output = Result<Vec<Port>>> + Send;
}

impl Octavia for OpenStack {
    async fn load_balancers_named(&self, name: &str) -> Result<Vec<LoadBalancer>> {
        let what = format!("load balancers named {name:?}");
        self.call(SERVICE, "loadbalancer_list", &what, |s| async move {
            octavia::load_balancers_named(&s, name).await
        })
        .await
    }

    async fn load_balancer(&self, id: &str) -> Result<LoadBalancer> {
        let what = format!("load balancer {id}");
        self.call(SERVICE, "loadbalancer_get", &what, |s| async move {
            octavia::load_balancer(&s, id).await
        })
        .await
    }

    async fn load_balancers_of(&self, project_id: &str) -> Result<Vec<LoadBalancer>> {
        let what = format!("the load balancers of project {project_id}");
        self.call(SERVICE, "loadbalancer_list_project", &what, |s| async move {
            octavia::load_balancers_of(&s, Some(project_id)).await
        })
        .await
    }

    /// Two lists (listeners, pools), then per pool its members and its monitor: each wire
    /// request counted under its own operation, like every other call.
    async fn tree(&self, load_balancer: LoadBalancer) -> Result<Tree> {
        let id = load_balancer.id.as_str();
        let what = format!("the listeners of load balancer {id}");
        let listeners =
            self.call(SERVICE, "listener_list", &what, |s| async move {
                octavia::listeners(&s, id).await
            })
            .await?;
        let what = format!("the pools of load balancer {id}");
        let pools = self
            .call(SERVICE, "pool_list", &what, |s| async move { octavia::pools(&s, id).await })
            .await?;
        let mut members = Vec::with_capacity(pools.len());
        let mut monitors = Vec::new();
        for pool in &pools {
            let what = format!("the members of pool {}", pool.id);
            let pool_id = pool.id.as_str();
            let listed = self
                .call(SERVICE, "member_list", &what, |s| async move {
                    octavia::members(&s, pool_id).await
                })
                .await?;
            members.push((pool.id.clone(), listed));
            if let Some(monitor_id) = pool.healthmonitor_id.as_deref() {
                let what = format!("health monitor {monitor_id}");
                let monitor = self
                    .call(SERVICE, "healthmonitor_get", &what, |s| async move {
                        octavia::monitor(&s, monitor_id).await
                    })
                    .await?;
                monitors.push(monitor);
            }
        }
        Ok(Tree { load_balancer, listeners, pools, members, monitors })
    }

    async fn create(&self, spec: &LoadBalancerSpec) -> Result<LoadBalancer> {
        let what = format!("load balancer {:?}", spec.name);
        self.call(SERVICE, "loadbalancer_create", &what, |s| async move {
            octavia::create(&s, spec).await
        })
        .await
    }

    async fn change(&self, load_balancer_id: &str, change: &Change) -> Result<Option<String>> {
        let what = format!("{} of load balancer {load_balancer_id}", change.label());
        self.call(SERVICE, change.label(), &what, |s| async move {
            octavia::apply(&s, load_balancer_id, change).await
        })
        .await
    }

    async fn delete(&self, id: &str) -> Result<()> {
        let what = format!("load balancer {id}");
        self.call(SERVICE, "loadbalancer_delete", &what, |s| async move {
            octavia::delete_cascade(&s, id).await
        })
        .await
    }
}

impl LoadBalancing for OpenStack {
    async fn has_load_balancer(&self) -> Result<bool> {
        let found = self
            .call("identity", "catalog_lookup", "the load-balancer endpoint", |s| async move {
                match s.get_endpoint(octavia::LOAD_BALANCER, std::iter::empty::<&str>()).await {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == osauth::ErrorKind::EndpointNotFound => Ok(false),
                    Err(e) => Err(e),
                }
            })
            .await?;
        Ok(found)
    }

    async fn floating_ips(&self, filter: &[(&'static str, String)]) -> Result<Vec<FloatingIp>> {
        self.call("network", "floatingip_list", "floating IPs", |s| async move {
            let query: Vec<(&str, &str)> = filter.iter().map(|(k, v)| (*k, v.as_str())).collect();
            floating_ips::list(&s, &query).await
        })
        .await
    }

    async fn create_floating_ip(
        &self,
        spec: &FloatingIpSpec,
        tags: &[String],
    ) -> Result<FloatingIp> {
        let what = format!("a floating IP on network {}", spec.floating_network_id);
        self.call("network", "floatingip_create", &what, |s| async move {
            floating_ips::create(&s, spec, tags).await
        })
        .await
    }

    async fn set_floating_ip_port(
        &self,
        id: &str,
        port_id: Option<&str>,
        revision: Option<u64>,
    ) -> Result<Written<()>> {
        self.update_floating_ip(id, json!({ "port_id": port_id }), revision).await
    }

    async fn describe_floating_ip(
        &self,
        id: &str,
        description: &str,
        revision: Option<u64>,
    ) -> Result<Written<()>> {
        self.update_floating_ip(id, json!({ "description": description }), revision).await
    }

    async fn add_floating_ip_tags(&self, id: &str, tags: &[String]) -> Result<()> {
        for tag in tags {
            let what = format!("tag {tag:?} of floating IP {id}");
            self.call("network", "floatingip_tag", &what, |s| async move {
                floating_ips::add_tag(&s, id, tag).await
            })
            .await?;
        }
        Ok(())
    }

    async fn floating_subnets(
        &self,
        network_id: &str,
        tag_filter: Option<(&'static str, String)>,
    ) -> Result<Vec<NamedSubnet>> {
        let what = format!("the subnets of network {network_id}");
        self.call("network", "subnet_list", &what, |s| {
            let tag_filter = tag_filter.clone();
            async move {
                let filter = tag_filter.as_ref().map(|(k, v)| (*k, v.as_str()));
                floating_ips::subnets(&s, network_id, filter).await
            }
        })
        .await
    }

    async fn delete_floating_ip(&self, id: &str) -> Result<()> {
        let what = format!("floating IP {id}");
        self.call("network", "floatingip_delete", &what, |s| async move {
            floating_ips::delete(&s, id).await
        })
        .await
    }

    async fn ports_named(&self, name: &str) -> Result<Vec<OwnedPort>> {
        let what = format!("ports named {name:?}");
        self.call("network", "port_list", &what, |s| async move {
            super::neutron::ports_named(&s, name).await
        })
        .await
    }

    async fn delete_port(&self, id: &str) -> Result<()> {
        let what = format!("port {id}");
        self.call("network", "port_delete", &what, |s| async move {
            super::neutron::delete_port(&s, id).await
        })
        .await
    }

    async fn subnets_of(&self, address: &str) -> Result<Vec<String>> {
        let what = format!("the ports of {address}");
        let ports = self
            .call("network", "port_list", &what, |s| async move {
                super::neutron::ports_with_ip(&s, address).await
            })
            .await?;
        let fixed = ports.into_iter().flat_map(|p| p.fixed_ips);
        let mut subnets: Vec<String> =
            fixed.filter(|f| f.ip_address == address).map(|f| f.subnet_id).collect();
        subnets.sort();
        subnets.dedup();
        Ok(subnets)
    }

    async fn subnet_of_server(&self, server_id: &str, address: &str) -> Result<Option<String>> {
        let what = format!("the ports of server {server_id}");
        let ports = self
            .call("network", "port_list", &what, |s| async move {
                super::neutron::list_ports(&s, &[server_id]).await
            })
            .await?;
        let fixed =
            ports.into_iter().filter(|p| p.device_id == server_id).flat_map(|p| p.fixed_ips);
        Ok(fixed.filter(|f| f.ip_address == address).map(|f| f.subnet_id).next())
    }

    async fn ports_on_subnet(&self, subnet_id: &str) -> Result<Vec<Port>> {
        let what = format!("the ports on subnet {subnet_id}");
        self.call("network", "port_list", &what, |s| async move {
            super::neutron::ports_on_subnet(&s, subnet_id).await
        })
        .await
    }
}

impl OpenStack {
    /// One guarded floating IP update (`floatingip_update`): a 412 is [`Written::Stale`].
    async fn update_floating_ip(
        &self,
        id: &str,
        fields: Value,
        revision: Option<u64>,
    ) -> Result<Written<()>> {
        let what = format!("floating IP {id}");
        let fields = &fields;
        let result = self
            .call("network", "floatingip_update", &what, |s| async move {
                floating_ips::update(&s, id, fields, revision).await
            })
            .await;
        stale_to_written(result)
    }
}
