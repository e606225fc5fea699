//! The security group on a Service's member ports (`[LoadBalancer] manage-security-groups`).
//!
//! Upstream's name `lb-sg-<uid>-<namespace>-<name>`, tagged with the Service's load-balancer
//! name and [`names::OWNER_TAG`]. Its ingress rules open each NodePort (`tcp`, `udp`, `sctp`) to
//! no more than the traffic that must reach it, which depends on the load balancer's provider
//! ([`Traffic`]): behind a proxy (amphora, and every provider but OVN, as upstream counts them)
//! only the load balancer's own subnets, the members' and the VIP's; with OVN, which keeps the
//! clients' addresses, the Service's source ranges (unset: everyone, per address family of the
//! members) and, when the ranges are restricted, the member subnets, where its health checks
//! come from. So a group taken over from upstream's CCM, which opens its NodePorts to the member
//! subnet, is not widened. It sits on the Neutron ports holding the members' addresses, is
//! taken off a port whose node left, and goes with the Service. Only groups a controller made
//! for the Service are ever changed or deleted (ours by the owner tag; upstream's, by its
//! description, are tagged and taken over); a port keeps every other group it has: its group
//! list is read, changed and written back under the port's revision (`If-Match`), read again
//! when another writer came first. Rules are added before the ones no longer wanted are
//! deleted: no moment with less open than asked.

use std::collections::{BTreeMap, BTreeSet};

use super::desired::{Backend, Port};
use super::names::ServiceId;
use super::{Error, Result, names, ownership};
use crate::cloud::octavia::LoadBalancer;
use crate::cloud::revision::{self, Written};
use crate::cloud::security_groups::{MemberPort, RuleSpec, SecurityGroup, SecurityGroups};

/// How many times a port's groups are read and written before the sync gives up (and is
/// retried with backoff): each 412 means another writer's change went in.
const ATTEMPTS: usize = 3;

/// Which Service the group serves.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Owner<'a> {
    pub(crate) service: &'a ServiceId<'a>,
    /// The Service's load-balancer name (its tag).
    pub(crate) load_balancer: &'a str,
}

impl Owner<'_> {
    fn group_name(&self) -> String {
        let service = self.service;
        names::security_group(service.uid, service.namespace, service.name)
    }
}

/// Where the traffic that reaches the members' NodePorts comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Traffic {
    /// A proxy: the load balancer itself connects to the members, from its addresses on the
    /// member subnets (with `member-subnet-id`) or the VIP subnet, and applies the source ranges
    /// on its listeners (`allowed_cidrs`). The amphora provider, and every provider but OVN.
    Proxied,
    /// The clients' own addresses reach the members (OVN), and its health checks come from the
    /// member subnets. Also the choice when the provider is not known (it works for any): the
    /// reconcile always knows it; only tests leave it out.
    FromClients,
}

impl Traffic {
    /// The traffic of a load balancer of `provider` (`None`: not known). Upstream's CCM counts
    /// only `ovn` as keeping the clients' addresses, and so does this controller.
    pub(crate) fn of(provider: Option<&str>) -> Self {
        match provider {
            Some(provider) if provider != "ovn" => Traffic::Proxied,
            _ => Traffic::FromClients,
        }
    }
}

/// The address ranges the NodePorts are opened to: for [`Traffic::Proxied`], `lb_cidrs` (the
/// subnets the load balancer speaks from); for [`Traffic::FromClients`], the source ranges and
/// `lb_cidrs` (the member subnets, for its health checks), or, without ranges, everyone in
/// each address family of the members.
pub(crate) fn prefixes(
    traffic: Traffic,
    source_ranges: &[String],
    members: &[Backend],
    lb_cidrs: &[String],
) -> BTreeSet<String> {
    match traffic {
        Traffic::Proxied => lb_cidrs.iter().cloned().collect(),
        Traffic::FromClients if source_ranges.is_empty() => {
            let any_v6 = members.iter().any(|m| m.address.contains(':'));
            let any_v4 = members.iter().any(|m| !m.address.contains(':'));
            let mut all = BTreeSet::new();
            if any_v4 || !any_v6 {
                all.insert("0.0.0.0/0".to_owned());
            }
            if any_v6 {
                all.insert("::/0".to_owned());
            }
            all
        }
        Traffic::FromClients => source_ranges.iter().chain(lb_cidrs).cloned().collect(),
    }
}

/// The ingress rules the group should have (egress rules are Neutron's defaults, left alone):
/// each NodePort from each of `prefixes`.
pub(crate) fn rules(ports: &[Port], prefixes: &BTreeSet<String>) -> BTreeSet<RuleSpec> {
    let mut out = BTreeSet::new();
    for port in ports.iter().filter(|p| p.node_port != 0) {
        for prefix in prefixes {
            out.insert(RuleSpec {
                direction: "ingress".to_owned(),
                ethertype: if prefix.contains(':') { "IPv6" } else { "IPv4" }.to_owned(),
                protocol: Some(port.protocol.to_ascii_lowercase()),
                port_range_min: Some(port.node_port),
                port_range_max: Some(port.node_port),
                remote_ip_prefix: Some(prefix.clone()),
            });
        }
    }
    out
}

/// The group exists with exactly [`rules`], on exactly the members' ports, for the load
/// balancer `serving` (its provider and VIP subnet; `None`: not known, the rules are then
/// [`Traffic::FromClients`]'s).
pub(crate) async fn ensure<C: SecurityGroups>(
    cloud: &C,
    owner: Owner<'_>,
    serving: Option<&LoadBalancer>,
    ports: &[Port],
    source_ranges: &[String],
    members: &[Backend],
) -> Result<()> {
    let addresses: Vec<String> = members.iter().map(|m| m.address.clone()).collect();
    let doing = format!("looking up the ports of {} members", addresses.len());
    let found = if addresses.is_empty() {
        Vec::new()
    } else {
        cloud.ports_with_ips(&addresses).await.map_err(Error::cloud(doing))?
    };
    let by_address = member_ports(members, &found);
    let traffic = Traffic::of(serving.map(|lb| lb.provider.as_str()));
    let lb_cidrs = match traffic {
        Traffic::FromClients if source_ranges.is_empty() => Vec::new(),
        Traffic::FromClients => subnet_cidrs(cloud, &by_address, None).await?,
        Traffic::Proxied => {
            let vip = serving.map(|lb| lb.vip_subnet_id.as_str()).filter(|s| !s.is_empty());
            subnet_cidrs(cloud, &by_address, vip).await?
        }
    };
    let (group, adopting) = find_or_create(cloud, owner).await?;
    let want = rules(ports, &prefixes(traffic, source_ranges, members, &lb_cidrs));
    sync_rules(cloud, &group, &want).await?;
    let wanted: BTreeMap<&str, &MemberPort> =
        by_address.values().map(|(port, _)| (port.id.as_str(), *port)).collect();
    for port in wanted.values() {
        if port.security_groups.contains(&group.id) {
            continue;
        }
        if port.port_security_enabled == Some(false) {
            tracing::warn!(port = %port.id, group = %group.id,
                "port security is off on this member port: its security group cannot be set");
            continue;
        }
        set_groups(cloud, port, &group, Change::Add).await?;
    }
    if adopting {
        // The in-tree layout let the members in through rules in the nodes' own groups that
        // name this group (then on the VIP port): gone only now that the members' ports carry
        // our rules, so no NodePort is refused in between.
        delete_rules_naming(cloud, &group).await?;
    }
    let doing = format!("listing the ports of security group {}", group.id);
    let carrying = cloud.ports_in_group(&group.id).await.map_err(Error::cloud(doing))?;
    for port in carrying.iter().filter(|p| !wanted.contains_key(p.id.as_str())) {
        take_off(cloud, port, &group).await?;
    }
    if adopting {
        // Tagged last: a take-over cut short is found again by its description and finished.
        let ours = [owner.load_balancer.to_owned(), names::OWNER_TAG.to_owned()];
        let missing: Vec<String> = ours.into_iter().filter(|t| !group.tags.contains(t)).collect();
        let doing = format!("tagging security group {} (taking it over)", group.id);
        cloud.add_security_group_tags(&group.id, &missing).await.map_err(Error::cloud(doing))?;
        tracing::info!(group = %group.id, name = %group.name, "security group taken over");
    }
    Ok(())
}

/// Deletes the rules of other groups that name `group` as their remote group.
async fn delete_rules_naming<C: SecurityGroups>(cloud: &C, group: &SecurityGroup) -> Result<()> {
    let doing = format!("listing the rules naming security group {}", group.id);
    let naming = cloud.rules_naming_group(&group.id).await.map_err(Error::cloud(doing))?;
    for rule in naming.iter().filter(|r| r.security_group_id != group.id) {
        let doing =
            format!("deleting rule {} of security group {}", rule.id, rule.security_group_id);
        match cloud.delete_rule(&rule.id).await {
            Ok(()) => {}
            Err(e) if e.is_not_found() => {}
            Err(source) => return Err(Error::cloud(doing)(source)),
        }
    }
    Ok(())
}

/// Every group a controller made for this Service: off its ports, then deleted.
pub(crate) async fn delete<C: SecurityGroups>(cloud: &C, owner: Owner<'_>) -> Result<()> {
    for group in ours(cloud, owner).await? {
        delete_group(cloud, &group).await?;
    }
    Ok(())
}

/// Deletes `group`, a controller's: taken off every port that carries it first (a port keeps
/// its other groups), and for one never taken over (the in-tree provider's), its rules in the
/// nodes' groups too.
pub(crate) async fn delete_group<C: SecurityGroups>(
    cloud: &C,
    group: &SecurityGroup,
) -> Result<()> {
    let doing = format!("listing the ports of security group {}", group.id);
    let carrying = cloud.ports_in_group(&group.id).await.map_err(Error::cloud(doing))?;
    for port in &carrying {
        take_off(cloud, port, group).await?;
    }
    if !names::is_ours(&group.tags) {
        delete_rules_naming(cloud, group).await?;
    }
    let doing = format!("deleting security group {}", group.id);
    match cloud.delete_security_group(&group.id).await {
        Ok(()) => {}
        Err(e) if e.is_not_found() => {}
        Err(source) => return Err(Error::cloud(doing)(source)),
    }
    tracing::info!(group = %group.id, "security group deleted");
    Ok(())
}

/// For each member address, the port holding it (and the subnet of that fixed IP): the port of
/// the member's own server when several hold the address (two networks with one range), the
/// only one otherwise; members without a port, or with several none of which is their server's,
/// are logged and left out (the group never goes on another network's port).
fn member_ports<'p>(
    members: &[Backend],
    found: &'p [MemberPort],
) -> BTreeMap<String, (&'p MemberPort, String)> {
    let mut out = BTreeMap::new();
    for member in members {
        let holders: Vec<(&MemberPort, String)> = found
            .iter()
            .filter_map(|port| {
                let fixed = port.fixed_ips.iter().find(|f| f.ip_address == member.address)?;
                Some((port, fixed.subnet_id.clone()))
            })
            .collect();
        let own = member
            .server_id
            .as_deref()
            .and_then(|server| holders.iter().find(|(port, _)| port.device_id == server));
        match (own, holders.as_slice()) {
            (Some(holder), _) | (None, [holder]) => {
                out.insert(member.address.clone(), holder.clone());
            }
            (None, []) => tracing::warn!(node = %member.name, address = %member.address,
                "no Neutron port holds this member's address: no security group for it"),
            (None, several) => tracing::warn!(node = %member.name, address = %member.address,
                ports = several.len(),
                "several Neutron ports hold this member's address and none is its server's: no \
                 security group for it"),
        }
    }
    out
}

/// The CIDRs of the member ports' subnets and of `vip` (the VIP subnet), one lookup.
async fn subnet_cidrs<C: SecurityGroups>(
    cloud: &C,
    by_address: &BTreeMap<String, (&MemberPort, String)>,
    vip: Option<&str>,
) -> Result<Vec<String>> {
    let members = by_address.values().map(|(_, subnet)| subnet.clone());
    let ids: BTreeSet<String> = members.chain(vip.map(str::to_owned)).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<String> = ids.into_iter().collect();
    let doing = format!("looking up subnets {}", ids.join(", "));
    let subnets = cloud.subnets(&ids).await.map_err(Error::cloud(doing))?;
    Ok(subnets.into_iter().map(|s| s.cidr).collect())
}

/// The Service's groups that a controller made for it (ours, or upstream's).
async fn ours<C: SecurityGroups>(cloud: &C, owner: Owner<'_>) -> Result<Vec<SecurityGroup>> {
    let name = owner.group_name();
    let doing = format!("looking up security group {name:?}");
    let found = cloud.security_groups_named(&name).await.map_err(Error::cloud(doing))?;
    Ok(found.into_iter().filter(|g| ownership::security_group_is_own(g, owner.service)).collect())
}

/// The Service's group, and whether it is being taken over (another controller's, not yet
/// tagged as ours); created when there is none.
async fn find_or_create<C: SecurityGroups>(
    cloud: &C,
    owner: Owner<'_>,
) -> Result<(SecurityGroup, bool)> {
    let name = owner.group_name();
    let mut found = ours(cloud, owner).await?;
    match found.len() {
        0 => {}
        1 => {
            let group = found.remove(0);
            let adopting = !names::is_ours(&group.tags);
            return Ok((group, adopting));
        }
        n => return Err(Error::Invalid(format!("{n} security groups are named {name:?}"))),
    }
    let service = owner.service;
    let description =
        names::security_group_description(service.namespace, service.name, owner.load_balancer);
    let tags = [owner.load_balancer.to_owned(), names::OWNER_TAG.to_owned()];
    let doing = format!("creating security group {name:?}");
    let group = cloud
        .create_security_group(&name, &description, &tags)
        .await
        .map_err(Error::cloud(doing))?;
    tracing::info!(group = %group.id, %name, "security group created");
    Ok((group, false))
}

/// Creates the missing ingress rules, then deletes the ingress rules nobody asked for (in that
/// order: traffic still allowed is never refused in between).
async fn sync_rules<C: SecurityGroups>(
    cloud: &C,
    group: &SecurityGroup,
    want: &BTreeSet<RuleSpec>,
) -> Result<()> {
    let ingress = group.security_group_rules.iter().filter(|r| r.spec.direction == "ingress");
    let have: BTreeSet<&RuleSpec> = ingress.clone().map(|r| &r.spec).collect();
    for rule in want.iter().filter(|r| !have.contains(r)) {
        let doing = format!("adding a rule to security group {}", group.id);
        cloud.create_rule(&group.id, rule).await.map_err(Error::cloud(doing))?;
    }
    for rule in ingress.filter(|r| !want.contains(&r.spec)) {
        let doing = format!("deleting rule {} of security group {}", rule.id, group.id);
        cloud.delete_rule(&rule.id).await.map_err(Error::cloud(doing))?;
    }
    Ok(())
}

async fn take_off<C: SecurityGroups>(
    cloud: &C,
    port: &MemberPort,
    group: &SecurityGroup,
) -> Result<()> {
    set_groups(cloud, port, group, Change::Remove).await
}

/// What a write does to a port's group list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Add,
    Remove,
}

/// Puts `group` on the port or takes it off: the port's list as read, changed, written back
/// under the port's revision; after a 412 the port is read again and the change applied to
/// what it holds then, so that a group another writer put on (or took off) meanwhile stays so.
async fn set_groups<C: SecurityGroups>(
    cloud: &C,
    port: &MemberPort,
    group: &SecurityGroup,
    change: Change,
) -> Result<()> {
    let doing = format!("setting security group {} on port {}", group.id, port.id);
    let mut port = port.clone();
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            port = match cloud.member_port(&port.id).await {
                Ok(port) => port,
                Err(e) if e.is_not_found() => return left_as_is(&port.id, group),
                Err(source) => return Err(Error::cloud(doing)(source)),
            };
        }
        if port.security_groups.contains(&group.id) == (change == Change::Add) {
            return Ok(());
        }
        let mut groups: Vec<String> =
            port.security_groups.iter().filter(|g| **g != group.id).cloned().collect();
        if change == Change::Add {
            groups.push(group.id.clone());
        }
        let guard = revision::guard(port.revision_number);
        match cloud.set_port_groups(&port.id, &groups, guard).await {
            Ok(Written::Done(())) => return Ok(()),
            Ok(Written::Stale) => {
                tracing::debug!(port = %port.id, attempt, "port changed meanwhile; read again");
            }
            // The port went (its server was deleted), or it carries a group this project cannot
            // see (Octavia's own on a VIP port belongs to its service project): left as it is.
            Err(e) if e.is_not_found() => return left_as_is(&port.id, group),
            Err(source) => return Err(Error::cloud(doing)(source)),
        }
    }
    Err(Error::Invalid(format!(
        "{doing}: the port changed {ATTEMPTS} times while being written; tried again later"
    )))
}

fn left_as_is(port: &str, group: &SecurityGroup) -> Result<()> {
    tracing::info!(%port, group = %group.id,
        "port not found, or it carries a group this project cannot see: left as it is");
    Ok(())
}

#[cfg(test)]
mod tests;
