//! The VIP port Octavia left behind. Octavia makes a load balancer's VIP port itself (named
//! `octavia-lb-<load balancer id>`, device owner `Octavia`) and deletes it with the load
//! balancer, unless it lost track of it: a create it reverted half-way can leave the port with
//! no load balancer naming it. After the controller deleted a load balancer of the Service's own
//! (the Service gone, or one in ERROR replaced) and Octavia reports it gone, such a port is
//! deleted too: only that exact name with Octavia's owner, so no live load balancer's port and
//! no port a user made is touched. Floating IPs on it go as on delete: a controller's released
//! (unless `keep-floatingip`), a user's let go.

use super::names::ServiceId;
use super::{Error, Result, floating};
use crate::cloud::load_balancing::LoadBalancing;
use crate::cloud::neutron::OwnedPort;
use crate::cloud::octavia::LoadBalancer;

/// The device owner Octavia gives the VIP ports it makes.
const OCTAVIA: &str = "Octavia";

/// Octavia's name for the VIP port of load balancer `id`.
fn name(id: &str) -> String {
    format!("octavia-lb-{id}")
}

/// Of `ports`, the VIP ports Octavia made for load balancer `id`.
pub(crate) fn left_behind<'p>(
    id: &str,
    ports: &'p [OwnedPort],
) -> impl Iterator<Item = &'p OwnedPort> {
    let name = name(id);
    ports.iter().filter(move |p| p.name == name && p.device_owner == OCTAVIA)
}

/// Once `lb` (the Service's own) is gone: its VIP port, if Octavia left it, with what a
/// controller made on it.
pub(crate) async fn clean_left<L: LoadBalancing>(
    cloud: &L,
    lb: &LoadBalancer,
    service: &ServiceId<'_>,
    keep_floating_ip: bool,
) -> Result<()> {
    let doing = format!("looking up the VIP port of load balancer {}", lb.id);
    let found = cloud.ports_named(&name(&lb.id)).await.map_err(Error::cloud(doing))?;
    for port in left_behind(&lb.id, &found) {
        let on_port = LoadBalancer { vip_port_id: port.id.clone(), ..lb.clone() };
        floating::release_all(cloud, &on_port, service, keep_floating_ip).await?;
        let doing = format!("deleting port {} ({}, left by Octavia)", port.id, port.name);
        match cloud.delete_port(&port.id).await {
            Ok(()) => tracing::info!(port = %port.id, load_balancer = %lb.id,
                "VIP port Octavia left behind deleted"),
            Err(e) if e.is_not_found() => {}
            Err(source) => return Err(Error::cloud(doing)(source)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(id: &str, name: &str, owner: &str) -> OwnedPort {
        OwnedPort { id: id.into(), name: name.into(), device_owner: owner.into() }
    }

    #[test]
    fn only_octavias_port_with_the_load_balancers_exact_name_is_left_behind() {
        let ports = [
            port("vip", "octavia-lb-1234", "Octavia"),
            port("users", "octavia-lb-1234", ""),
            port("other", "octavia-lb-12345", "Octavia"),
            port("node", "worker-0", "compute:nova"),
        ];
        let ids: Vec<&str> = left_behind("1234", &ports).map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["vip"]);
    }
}
