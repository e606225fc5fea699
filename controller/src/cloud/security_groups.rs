//! Neutron security groups for load-balancer members (`[LoadBalancer] manage-security-groups`):
//! the group, its ingress rules, and the member ports that carry it.

use std::future::Future;

use osauth::Session;
use osauth::services::NETWORK;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::cloud::limit::Noted as _;

use super::revision::{Written, guarded, stale_to_written};
use super::{OpenStack, Result};

/// Neutron's `fixed_ips` filters per port listing: keeps the URL far below any proxy's limit.
const ADDRESSES_PER_LISTING: usize = 100;

/// A security group with its rules (Neutron returns them inline).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct SecurityGroup {
    pub(crate) id: String,
    /// The project it is in (`purge` refuses to work across projects).
    pub(crate) project_id: String,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) tags: Vec<String>,
    pub(crate) security_group_rules: Vec<Rule>,
}

/// A rule as Neutron returns it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct Rule {
    pub(crate) id: String,
    /// The group the rule belongs to.
    pub(crate) security_group_id: String,
    #[serde(flatten)]
    pub(crate) spec: RuleSpec,
}

/// What a rule allows; what the controller compares and creates.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct RuleSpec {
    /// `ingress` or `egress`.
    pub(crate) direction: String,
    /// `IPv4` or `IPv6`.
    pub(crate) ethertype: String,
    /// `tcp`, `udp`, `sctp`; `None`: any.
    pub(crate) protocol: Option<String>,
    pub(crate) port_range_min: Option<u16>,
    pub(crate) port_range_max: Option<u16>,
    pub(crate) remote_ip_prefix: Option<String>,
}

/// A port as the membership needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct MemberPort {
    pub(crate) id: String,
    /// The server it is bound to (a node's, by its providerID).
    pub(crate) device_id: String,
    pub(crate) fixed_ips: Vec<super::neutron::FixedIp>,
    pub(crate) security_groups: Vec<String>,
    /// `false`: Neutron refuses security groups on it.
    pub(crate) port_security_enabled: Option<bool>,
    /// Bumped by every change: the guard of the groups' read-modify-write.
    pub(crate) revision_number: u64,
}

/// A subnet's CIDR.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct Subnet {
    pub(crate) id: String,
    pub(crate) cidr: String,
}

/// What the service controller needs from Neutron to manage its members' security groups.
pub(crate) trait SecurityGroups: Send + Sync + 'static {
    /// Security groups with exactly this name, with their rules.
    fn security_groups_named(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Vec<SecurityGroup>>> + Send;
    /// Creates a group, then tags it (Neutron takes tags only after create).
    fn create_security_group(
        &self,
        name: &str,
        description: &str,
        tags: &[String],
    ) -> impl Future<Output = Result<SecurityGroup>> + Send;
    /// Adds `tags` to a group, one call each (`PUT …/tags/{tag}`): a tag someone else writes
    /// meanwhile is kept, where replacing the whole list would drop it (Neutron's tag calls
    /// take no revision guard).
    fn add_security_group_tags(
        &self,
        id: &str,
        tags: &[String],
    ) -> impl Future<Output = Result<()>> + Send;
    /// Deletes a group (Neutron refuses while a port still carries it).
    fn delete_security_group(&self, id: &str) -> impl Future<Output = Result<()>> + Send;
    /// Adds one rule to a group.
    fn create_rule(
        &self,
        group_id: &str,
        rule: &RuleSpec,
    ) -> impl Future<Output = Result<()>> + Send;
    /// Deletes one rule.
    fn delete_rule(&self, id: &str) -> impl Future<Output = Result<()>> + Send;
    /// The rules of any group that let in traffic from the members of group `group_id`
    /// (`remote_group_id`): the in-tree provider's rules in the nodes' groups.
    fn rules_naming_group(&self, group_id: &str) -> impl Future<Output = Result<Vec<Rule>>> + Send;
    /// The ports holding any of `addresses` as a fixed IP.
    fn ports_with_ips(
        &self,
        addresses: &[String],
    ) -> impl Future<Output = Result<Vec<MemberPort>>> + Send;
    /// The ports carrying group `group_id`.
    fn ports_in_group(
        &self,
        group_id: &str,
    ) -> impl Future<Output = Result<Vec<MemberPort>>> + Send;
    /// One port (again, after a guarded write found it changed).
    fn member_port(&self, id: &str) -> impl Future<Output = Result<MemberPort>> + Send;
    /// Sets a port's security groups (the whole list), guarded by `revision` when given.
    fn set_port_groups(
        &self,
        port_id: &str,
        groups: &[String],
        revision: Option<u64>,
    ) -> impl Future<Output = Result<Written<()>>> + Send;
    /// The subnets with these IDs.
    fn subnets(&self, ids: &[String]) -> impl Future<Output = Result<Vec<Subnet>>> + Send;
}

#[derive(Deserialize)]
struct GroupsRoot {
    security_groups: Vec<SecurityGroup>,
}

/// Security groups matching `filter` (`project_id`, …), with their rules.
pub(crate) async fn list(
    session: &Session,
    filter: &[(&str, &str)],
) -> Result<Vec<SecurityGroup>, osauth::Error> {
    let root: GroupsRoot =
        session.get(NETWORK, &["security-groups"]).query(filter).fetched().await?;
    Ok(root.security_groups)
}

#[derive(Deserialize)]
struct GroupRoot {
    security_group: SecurityGroup,
}

#[derive(Deserialize)]
struct RulesRoot {
    security_group_rules: Vec<Rule>,
}

#[derive(Deserialize)]
struct PortsRoot {
    ports: Vec<MemberPort>,
}

#[derive(Deserialize)]
struct SubnetsRoot {
    subnets: Vec<Subnet>,
}

/// The port fields the membership reads (Neutron's `fields` filter keeps the answers small).
const PORT_FIELDS: [(&str, &str); 6] = [
    ("fields", "id"),
    ("fields", "device_id"),
    ("fields", "fixed_ips"),
    ("fields", "security_groups"),
    ("fields", "port_security_enabled"),
    ("fields", "revision_number"),
];

async fn ports(
    session: &Session,
    filter: Vec<(&str, String)>,
) -> Result<Vec<MemberPort>, osauth::Error> {
    let mut query: Vec<(&str, &str)> = filter.iter().map(|(k, v)| (*k, v.as_str())).collect();
    query.extend(PORT_FIELDS);
    let root: PortsRoot = session.get(NETWORK, &["ports"]).query(&query).fetched().await?;
    Ok(root.ports)
}

/// `PUT /security-groups/{id}/tags`: the whole tag list (only for a group just made, which no one
/// else has tagged yet).
async fn put_tags(session: &Session, id: &str, tags: &[String]) -> Result<(), osauth::Error> {
    let body = json!({ "tags": tags });
    session.put(NETWORK, &["security-groups", id, "tags"]).json(&body).sent().await.map(drop)
}

impl SecurityGroups for OpenStack {
    async fn security_groups_named(&self, name: &str) -> Result<Vec<SecurityGroup>> {
        let what = format!("security groups named {name:?}");
        self.call("network", "security_group_list", &what, |s| async move {
            let root: GroupsRoot =
                s.get(NETWORK, &["security-groups"]).query(&[("name", name)]).fetched().await?;
            Ok(root.security_groups)
        })
        .await
    }

    async fn create_security_group(
        &self,
        name: &str,
        description: &str,
        tags: &[String],
    ) -> Result<SecurityGroup> {
        let what = format!("security group {name:?}");
        self.call("network", "security_group_create", &what, |s| async move {
            let body = json!({"security_group": {"name": name, "description": description}});
            let root: GroupRoot =
                s.post(NETWORK, &["security-groups"]).json(&body).fetched().await?;
            let mut group = root.security_group;
            put_tags(&s, &group.id, tags).await?;
            group.tags = tags.to_vec();
            Ok(group)
        })
        .await
    }

    async fn add_security_group_tags(&self, id: &str, tags: &[String]) -> Result<()> {
        for tag in tags {
            let what = format!("tag {tag:?} of security group {id}");
            self.call("network", "security_group_tag", &what, |s| async move {
                s.put(NETWORK, &["security-groups", id, "tags", tag]).sent().await.map(drop)
            })
            .await?;
        }
        Ok(())
    }

    async fn delete_security_group(&self, id: &str) -> Result<()> {
        let what = format!("security group {id}");
        self.call("network", "security_group_delete", &what, |s| async move {
            s.delete(NETWORK, &["security-groups", id]).sent().await.map(drop)
        })
        .await
    }

    async fn create_rule(&self, group_id: &str, rule: &RuleSpec) -> Result<()> {
        let what = format!("a rule of security group {group_id}");
        self.call("network", "security_group_rule_create", &what, |s| async move {
            let mut body = serde_json::to_value(rule)
                .map_err(|e| osauth::Error::new(osauth::ErrorKind::InvalidInput, e.to_string()))?;
            body["security_group_id"] = json!(group_id);
            let body = json!({ "security_group_rule": body });
            s.post(NETWORK, &["security-group-rules"]).json(&body).sent().await.map(drop)
        })
        .await
    }

    async fn delete_rule(&self, id: &str) -> Result<()> {
        let what = format!("security group rule {id}");
        self.call("network", "security_group_rule_delete", &what, |s| async move {
            s.delete(NETWORK, &["security-group-rules", id]).sent().await.map(drop)
        })
        .await
    }

    async fn rules_naming_group(&self, group_id: &str) -> Result<Vec<Rule>> {
        let what = format!("the rules naming security group {group_id}");
        self.call("network", "security_group_rule_list", &what, |s| async move {
            let query = [("remote_group_id", group_id)];
            let root: RulesRoot =
                s.get(NETWORK, &["security-group-rules"]).query(&query).fetched().await?;
            Ok(root.security_group_rules)
        })
        .await
    }

    async fn ports_with_ips(&self, addresses: &[String]) -> Result<Vec<MemberPort>> {
        let mut found = Vec::new();
        for chunk in addresses.chunks(ADDRESSES_PER_LISTING) {
            let what = format!("the ports of {} addresses", chunk.len());
            let filter: Vec<(&str, String)> =
                chunk.iter().map(|a| ("fixed_ips", format!("ip_address={a}"))).collect();
            let part = self
                .call("network", "port_list", &what, |s| {
                    let filter = filter.clone();
                    async move { ports(&s, filter).await }
                })
                .await?;
            found.extend(part);
        }
        Ok(found)
    }

    async fn ports_in_group(&self, group_id: &str) -> Result<Vec<MemberPort>> {
        let what = format!("the ports of security group {group_id}");
        self.call("network", "port_list", &what, |s| async move {
            ports(&s, vec![("security_groups", group_id.to_owned())]).await
        })
        .await
    }

    async fn member_port(&self, id: &str) -> Result<MemberPort> {
        super::revision::port(self, id, &PORT_FIELDS).await
    }

    async fn set_port_groups(
        &self,
        port_id: &str,
        groups: &[String],
        revision: Option<u64>,
    ) -> Result<Written<()>> {
        let what = format!("port {port_id}");
        let result = self
            .call("network", "port_update", &what, |s| async move {
                let body = json!({"port": {"security_groups": groups}});
                let request = s.put(NETWORK, &["ports", port_id]).json(&body);
                guarded::<serde::de::IgnoredAny>(request, revision).await.map(drop)
            })
            .await;
        stale_to_written(result)
    }

    async fn subnets(&self, ids: &[String]) -> Result<Vec<Subnet>> {
        let what = format!("{} subnets", ids.len());
        self.call("network", "subnet_list", &what, |s| async move {
            let mut query: Vec<(&str, &str)> = ids.iter().map(|id| ("id", id.as_str())).collect();
            query.extend([("fields", "id"), ("fields", "cidr")]);
            let root: SubnetsRoot = s.get(NETWORK, &["subnets"]).query(&query).fetched().await?;
            Ok(root.subnets)
        })
        .await
    }
}
