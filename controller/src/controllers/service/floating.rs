//! The floating IP of an external load balancer: the one already on its VIP port, the user's
//! (`spec.loadBalancerIP`: theirs when it exists, else allocated with that address), or one
//! allocated, described as upstream describes its own (so that upstream's CCM, which releases
//! only those, releases it after a hand-back) and tagged as ours; released only if a controller
//! made it for the Service (ours, or upstream's by its description), a user's only detached.
//! One that another controller made for the Service is marked ours (described and tagged) when
//! its load balancer is adopted, so that no later rename of the load balancer can orphan it.

use super::annotations::Settings;
use super::floating_subnet::Matcher;
use super::names::ServiceId;
use super::{Error, Result, names, ownership};
use crate::cloud::floating_ips::{FloatingIp, FloatingIpSpec};
use crate::cloud::load_balancing::LoadBalancing;
use crate::cloud::octavia::LoadBalancer;
use crate::cloud::revision::{self, Written};

/// How many times a floating IP is read and moved before the sync gives up (and is retried).
const ATTEMPTS: usize = 3;

/// The floating IPs on the VIP port of `lb`.
async fn on_vip<L: LoadBalancing>(cloud: &L, lb: &LoadBalancer) -> Result<Vec<FloatingIp>> {
    let filter = [("port_id", lb.vip_port_id.clone())];
    let doing = format!("listing the floating IPs of load balancer {}", lb.id);
    cloud.floating_ips(&filter).await.map_err(Error::cloud(doing))
}

/// The public address of `lb`: `None` for an internal one, or when no floating network is
/// configured (the VIP is then the address).
pub(crate) async fn ensure<L: LoadBalancing>(
    cloud: &L,
    lb: &LoadBalancer,
    service: &ServiceId<'_>,
    settings: &Settings,
    requested: Option<&str>,
) -> Result<Option<String>> {
    let attached = on_vip(cloud, lb).await?;
    if settings.internal {
        release(cloud, lb, &attached, service, settings.keep_floating_ip).await?;
        return Ok(None);
    }
    if let Some(fip) =
        attached.iter().find(|f| requested.is_none_or(|r| r == f.floating_ip_address))
    {
        // Another controller's, adopted before its floating IP was marked (by a version of
        // this controller that did not mark them): marked now, while its rule still knows it.
        mark(cloud, lb, fip, service).await?;
        return Ok(Some(fip.floating_ip_address.clone()));
    }
    // Attached but not the address asked for: let go of it first.
    release(cloud, lb, &attached, service, settings.keep_floating_ip).await?;
    if let Some(address) = requested {
        let filter = [("floating_ip_address", address.to_owned())];
        let doing = format!("looking up floating IP {address}");
        let found = cloud.floating_ips(&filter).await.map_err(Error::cloud(doing))?;
        let Some(fip) = found.into_iter().next() else {
            return allocate_requested(cloud, lb, service, settings, address).await.map(Some);
        };
        move_to(cloud, fip.clone(), lb, true).await?;
        return Ok(Some(fip.floating_ip_address));
    }
    let Some(network) = &settings.floating_network_id else { return Ok(None) };
    let mut spec = FloatingIpSpec {
        floating_network_id: network.clone(),
        subnet_id: settings.floating_subnet.id.clone(),
        floating_ip_address: None,
        port_id: lb.vip_port_id.clone(),
        description: names::upstream_floating_ip(service.cluster, service.namespace, service.name),
    };
    let tags = [lb.name.clone(), names::OWNER_TAG.to_owned()];
    let doing =
        format!("allocating a floating IP on network {network} for load balancer {}", lb.id);
    let mut last = None;
    for subnet in candidate_subnets(cloud, network, settings).await? {
        spec.subnet_id = subnet;
        match cloud.create_floating_ip(&spec, &tags).await {
            Ok(fip) => {
                tracing::info!(load_balancer = %lb.id, address = %fip.floating_ip_address,
                    subnet = ?spec.subnet_id, "floating IP allocated");
                return Ok(Some(fip.floating_ip_address));
            }
            Err(error) => {
                tracing::info!(subnet = ?spec.subnet_id, %error, "no floating IP from this subnet");
                last = Some(error);
            }
        }
    }
    Err(match last {
        Some(error) => Error::cloud(doing)(error),
        None => Error::Invalid(format!("{doing}: no subnet to try")),
    })
}

/// `spec.loadBalancerIP` not allocated yet: allocated with that address on the floating
/// network, as upstream does, and tagged as ours (so released with the Service, where a user's
/// pre-made one is only detached). Neutron refusing the address (outside the network's
/// subnets, taken by another project, or its policy: choosing the address is admin-only by
/// default) is the Service's error, with the reason.
async fn allocate_requested<L: LoadBalancing>(
    cloud: &L,
    lb: &LoadBalancer,
    service: &ServiceId<'_>,
    settings: &Settings,
    address: &str,
) -> Result<String> {
    let Some(network) = &settings.floating_network_id else {
        return Err(Error::Invalid(format!(
            "spec.loadBalancerIP {address}: no such floating IP in the project, and no floating \
             network to allocate it on (floating-network-id)"
        )));
    };
    let spec = FloatingIpSpec {
        floating_network_id: network.clone(),
        subnet_id: settings.floating_subnet.id.clone(),
        floating_ip_address: Some(address.to_owned()),
        port_id: lb.vip_port_id.clone(),
        description: names::upstream_floating_ip(service.cluster, service.namespace, service.name),
    };
    let tags = [lb.name.clone(), names::OWNER_TAG.to_owned()];
    match cloud.create_floating_ip(&spec, &tags).await {
        Ok(fip) => {
            tracing::info!(load_balancer = %lb.id, %address, "floating IP allocated as asked");
            Ok(fip.floating_ip_address)
        }
        Err(crate::cloud::Error::Call { source, .. })
            if source.kind() == osauth::ErrorKind::AccessDenied =>
        {
            Err(Error::Invalid(format!(
                "spec.loadBalancerIP {address}: not a floating IP of the project, and Neutron's \
                 policy does not let this project choose a floating IP's address \
                 (create_floatingip:floating_ip_address, admin only by default): allocate it in \
                 the project first, or have the policy granted"
            )))
        }
        Err(crate::cloud::Error::Call { source, .. }) if refused(&source) => {
            Err(Error::Invalid(format!(
                "spec.loadBalancerIP {address}: not a floating IP of the project, and floating \
                 network {network} cannot give it: {source}"
            )))
        }
        Err(source) => {
            let doing = format!("allocating floating IP {address} on network {network}");
            Err(Error::cloud(doing)(source))
        }
    }
}

/// Before the Service's own `lb`, made by another controller, gets our tags: the floating IPs
/// on its VIP that a controller made for the Service are marked ours. Until then they are known
/// by their maker's marks (the in-tree provider's: none at all, on a load balancer of its
/// name), which a rename of the load balancer (`migrate-load-balancers`) would take away; ours
/// stay. Done first, so that a load balancer of ours never has an unmarked floating IP, whatever
/// step a kill stops the adoption at.
pub(crate) async fn adopt<L: LoadBalancing>(
    cloud: &L,
    lb: &LoadBalancer,
    service: &ServiceId<'_>,
) -> Result<()> {
    for fip in &on_vip(cloud, lb).await? {
        mark(cloud, lb, fip, service).await?;
    }
    Ok(())
}

/// Marks `fip`, when a controller made it for the Service (the ownership rule), as ours: a
/// description first when it has none (under its revision: one a user described meanwhile is
/// theirs), which marks it by itself, then our tags, one call each. Nothing when it has both.
async fn mark<L: LoadBalancing>(
    cloud: &L,
    lb: &LoadBalancer,
    fip: &FloatingIp,
    service: &ServiceId<'_>,
) -> Result<()> {
    let mut fip = fip.clone();
    let doing = format!("marking floating IP {} as ours", fip.floating_ip_address);
    for attempt in 0..=ATTEMPTS {
        if attempt > 0 {
            let filter = [("id", fip.id.clone())];
            let found = cloud.floating_ips(&filter).await.map_err(Error::cloud(doing.clone()))?;
            let Some(again) = found.into_iter().next() else { return Ok(()) };
            fip = again;
        }
        if !ownership::floating_ip_is_own(&fip, lb, service) {
            return Ok(());
        }
        let Some(description) = ownership::floating_ip_marks(&fip, service).description else {
            break;
        };
        if attempt == ATTEMPTS {
            return Err(Error::Invalid(format!(
                "{doing}: it changed {ATTEMPTS} times while being written; tried again later"
            )));
        }
        let guard = revision::guard(fip.revision_number);
        match cloud.describe_floating_ip(&fip.id, &description, guard).await {
            Ok(Written::Done(())) => {
                fip.description = description;
                break;
            }
            Ok(Written::Stale) => {
                tracing::debug!(address = %fip.floating_ip_address, attempt,
                    "floating IP changed meanwhile; read again");
            }
            Err(source) => return Err(Error::cloud(doing)(source)),
        }
    }
    let missing = ownership::floating_ip_marks(&fip, service).tags;
    if missing.is_empty() {
        return Ok(());
    }
    cloud.add_floating_ip_tags(&fip.id, &missing).await.map_err(Error::cloud(doing))?;
    tracing::info!(address = %fip.floating_ip_address, load_balancer = %lb.id,
        "floating IP marked ours (adopted with its load balancer)");
    Ok(())
}

/// Neutron said no to the request itself (400, 409): not worth a retry as it stands.
fn refused(error: &osauth::Error) -> bool {
    matches!(error.kind(), osauth::ErrorKind::InvalidInput | osauth::ErrorKind::Conflict)
}

/// The subnets to try in order: the configured one (or Neutron's choice), or those that
/// `floating-subnet` / `floating-subnet-tags` select.
async fn candidate_subnets<L: LoadBalancing>(
    cloud: &L,
    network: &str,
    settings: &Settings,
) -> Result<Vec<Option<String>>> {
    let spec = &settings.floating_subnet;
    let Some(matcher) = Matcher::new(spec).map_err(|e| Error::Settings(vec![e]))? else {
        return Ok(vec![spec.id.clone()]);
    };
    let doing = format!("listing the subnets of floating network {network}");
    let subnets = cloud
        .floating_subnets(network, matcher.tag_filter.clone())
        .await
        .map_err(Error::cloud(doing))?;
    let chosen: Vec<Option<String>> =
        subnets.into_iter().filter(|s| matcher.matches(&s.name)).map(|s| Some(s.id)).collect();
    if chosen.is_empty() {
        return Err(Error::Invalid(format!(
            "no subnet of floating network {network} matches floating-subnet {:?} and \
             floating-subnet-tags {:?} (only subnets the project can see count: Neutron hides \
             an external network's subnets unless the network is shared with the project)",
            spec.pattern.as_deref().unwrap_or(""),
            spec.tags.as_deref().unwrap_or("")
        )));
    }
    Ok(chosen)
}

/// Before the load balancer goes: the floating IPs a controller made for the Service are
/// released (unless `keep`), a user's are only detached.
pub(crate) async fn release_all<L: LoadBalancing>(
    cloud: &L,
    lb: &LoadBalancer,
    service: &ServiceId<'_>,
    keep: bool,
) -> Result<()> {
    let attached = on_vip(cloud, lb).await?;
    release(cloud, lb, &attached, service, keep).await
}

async fn release<L: LoadBalancing>(
    cloud: &L,
    lb: &LoadBalancer,
    fips: &[FloatingIp],
    service: &ServiceId<'_>,
    keep: bool,
) -> Result<()> {
    for fip in fips {
        // Only floating IPs a controller allocated for the Service are ever released.
        if ownership::floating_ip_is_own(fip, lb, service) && !keep {
            let doing = format!("releasing floating IP {}", fip.floating_ip_address);
            cloud.delete_floating_ip(&fip.id).await.map_err(Error::cloud(doing))?;
        } else {
            move_to(cloud, fip.clone(), lb, false).await?;
        }
    }
    Ok(())
}

/// Attaches `fip` to the VIP port of `lb`, or detaches it from there: under its revision, read
/// again after a 412, so that a floating IP someone else moved meanwhile is never taken from
/// them (attaching one now on another port is an error; detaching one gone elsewhere, nothing).
async fn move_to<L: LoadBalancing>(
    cloud: &L,
    mut fip: FloatingIp,
    lb: &LoadBalancer,
    attach: bool,
) -> Result<()> {
    let address = fip.floating_ip_address.clone();
    let doing = match attach {
        true => format!("attaching floating IP {address} to load balancer {}", lb.id),
        false => format!("detaching floating IP {address}"),
    };
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            let filter = [("id", fip.id.clone())];
            let found = cloud.floating_ips(&filter).await.map_err(Error::cloud(doing.clone()))?;
            match found.into_iter().next() {
                Some(again) => fip = again,
                None if attach => {
                    return Err(Error::Invalid(format!("{doing}: it was released meanwhile")));
                }
                None => return Ok(()),
            }
        }
        let on = fip.port_id.as_deref().filter(|p| !p.is_empty());
        let vip = Some(lb.vip_port_id.as_str());
        match (attach, on) {
            (true, on) if on == vip => return Ok(()),
            (true, Some(_)) => {
                return Err(Error::Invalid(format!(
                    "spec.loadBalancerIP {address}: the floating IP is attached to another port"
                )));
            }
            (false, on) if on != vip => return Ok(()),
            _ => {}
        }
        let to = attach.then_some(lb.vip_port_id.as_str());
        let guard = revision::guard(fip.revision_number);
        match cloud.set_floating_ip_port(&fip.id, to, guard).await {
            Ok(Written::Done(())) => return Ok(()),
            Ok(Written::Stale) => {
                tracing::debug!(%address, attempt, "floating IP changed meanwhile; read again");
            }
            Err(source) => return Err(Error::cloud(doing)(source)),
        }
    }
    Err(Error::Invalid(format!(
        "{doing}: it changed {ATTEMPTS} times while being written; tried again later"
    )))
}
