//! `migrate-load-balancers`: hands every Service's load balancer to the in-tree provider
//! (`--to in-tree`, before a downgrade) or takes it back (`--to external`), by renaming it in
//! place: the in-tree provider looks a load balancer up only by `a<uid32>`, so without this a
//! downgrade gives every Service made under this controller a second load balancer and a new
//! address. The same ID, VIP, floating IP and listeners stay; our tags stay too, so that this
//! controller knows the load balancer again when it comes back (with or without `--to
//! external`). Shared load balancers cannot be handed back: the in-tree provider has no
//! sharing.
//!
//! Each Service's load balancer is found by its `load-balancer-id` annotation first, then by
//! name; the cluster name comes from our owner tag on those load balancers
//! (`migrate/cluster.rs`) unless `--cluster-name` is given, and a given one that disagrees with the tags
//! refuses the run before any change (exit 2). A Service with an address whose load balancer
//! is not found fails the run (exit 1): the in-tree provider would make it a second one.

use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use crate::cloud::OpenStack;
use crate::cloud::load_balancing::{LoadBalancing, Octavia};
use crate::cloud::octavia::{ACTIVE, Change, LoadBalancer};
use crate::controllers::service::names::ServiceId;
use crate::controllers::service::ownership::{self, Found, Maker};
use crate::controllers::service::reconcile::wants_load_balancer;
use crate::controllers::service::{annotations, diff, names, wait};

/// Where the load balancers go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// To the in-tree provider's names (`a<uid32>`), before going back to it.
    InTree,
    /// Back to this controller's names (`kube_service_<cluster>_<ns>_<name>`).
    External,
}

/// `migrate-load-balancers`.
#[derive(Debug, Clone, clap::Args)]
pub struct MigrateArgs {
    /// `in-tree`: rename each Service's load balancer to the name the in-tree provider looks
    /// for, before a downgrade; `external`: rename it back.
    #[arg(long = "to", value_name = "WHERE")]
    pub(crate) to: Target,
    /// The CCM's cloud.conf (credentials, `[Global] secret-name` read once).
    #[arg(long = "cloud-config", value_name = "FILE")]
    pub(crate) cloud_config: PathBuf,
    /// Path to a kubeconfig; default: in-cluster config.
    #[arg(long = "kubeconfig", value_name = "FILE")]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// The CCM's `--cluster-name` (part of its load-balancer names). Default: the cluster our
    /// tags on the Services' load balancers name (found through `load-balancer-id`), else
    /// `kubernetes`; a given name those tags contradict is refused before any change.
    #[arg(long = "cluster-name", value_name = "NAME")]
    pub(crate) cluster_name: Option<String>,
    /// Print what would change; change nothing.
    #[arg(long = "dry-run")]
    pub(crate) dry_run: bool,
}

/// How a run ended: its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every Service went through (exit 0).
    Done = 0,
    /// At least one Service did not (exit 1); each line says why.
    Failed = 1,
    /// Nothing was changed: the cluster name is in doubt (exit 2).
    Refused = 2,
}

/// What to do with one Service's load balancer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Rename (and describe) it.
    Rename { id: String, from: String, name: String, description: String, tags: Vec<String> },
    /// Nothing to do; the line says why.
    Done(String),
    /// Left as it is, and the run fails: the line says why.
    Skip(String),
}

/// Pure: the step for `found` (with `others` other Services on it) going `to`.
pub(crate) fn step(to: Target, found: &Found, others: usize, service: &ServiceId<'_>) -> Step {
    let in_tree = names::in_tree(service.uid);
    let (lb, maker) = match found {
        Found::Nothing => return Step::Done("no load balancer".into()),
        Found::Foreign(lb) => {
            return Step::Skip(format!(
                "load balancer {} is named {:?} but is not this Service's (no controller's mark)",
                lb.id, lb.name
            ));
        }
        Found::Shared(lb) if to == Target::InTree => {
            return Step::Skip(format!(
                "joins shared load balancer {} (load-balancer-id): the in-tree provider has no \
                 sharing, so it cannot be handed back",
                lb.id
            ));
        }
        Found::Shared(lb) => return Step::Done(format!("joins shared load balancer {}", lb.id)),
        Found::Own(lb, maker) => (lb, *maker),
    };
    let (name, description) = match to {
        Target::InTree => (in_tree.clone(), format!("Kubernetes external service {in_tree}")),
        Target::External => (service.load_balancer().to_owned(), service.description().to_owned()),
    };
    if lb.name == name {
        return Step::Done(format!("load balancer {} is already named {name:?}", lb.id));
    }
    if to == Target::External && maker == Maker::InTree {
        return Step::Done(format!(
            "load balancer {} was made by the in-tree provider: the CCM adopts it as it is",
            lb.id
        ));
    }
    if lb.provisioning_status != ACTIVE {
        return Step::Skip(format!(
            "load balancer {} is {}, not ACTIVE",
            lb.id, lb.provisioning_status
        ));
    }
    if others > 0 {
        return Step::Skip(format!(
            "load balancer {} also serves {others} other Service(s): a shared load balancer \
             cannot be handed back",
            lb.id
        ));
    }
    let tags = match to {
        // Our tags stay: this controller knows the load balancer again when it comes back.
        Target::InTree => lb.tags.clone(),
        Target::External => ownership::our_tags(lb, service),
    };
    Step::Rename { id: lb.id.clone(), from: lb.name.clone(), name, description, tags }
}

/// Runs the command.
pub async fn run(args: MigrateArgs, search: Vec<PathBuf>) -> anyhow::Result<Outcome> {
    let (checked, config) =
        crate::oneshot::read_config(&args.cloud_config, &search).map_err(anyhow::Error::msg)?;
    let client =
        crate::kube::client(args.kubeconfig.as_deref(), None, crate::kube::Refused::shared())
            .await?;
    let connected = crate::oneshot::login(&checked, &config, Some(&client)).await?;
    let cloud = connected.cloud.clone();
    let services = Api::<Service>::all(client).list(&ListParams::default()).await?;
    let services: Vec<&Service> =
        services.items.iter().filter(|s| wants_load_balancer(s)).collect();
    let tagged = tagged_clusters(cloud.as_ref(), &services).await?;
    let cluster_name = match cluster::choose(args.cluster_name.as_deref(), &tagged) {
        Ok(name) => name,
        Err(why) => {
            eprintln!(
                "openstack-cloud-controller-manager migrate-load-balancers: refused, nothing changed: {why}"
            );
            return Ok(Outcome::Refused);
        }
    };
    if args.cluster_name.is_none() {
        let from = if tagged.is_empty() { "no load balancer carries our tag" } else { "our tags" };
        eprintln!("cluster name {cluster_name:?} ({from}; --cluster-name overrides)");
    }
    let mut all_ok = true;
    for service in services {
        let (line, ok) = migrate(&cloud, &args, &cluster_name, service).await;
        println!("{}/{}: {line}", service.namespace().unwrap_or_default(), service.name_any());
        all_ok &= ok;
    }
    drop(connected);
    Ok(if all_ok { Outcome::Done } else { Outcome::Failed })
}

/// The cluster each Service's annotated load balancer is tagged for, where it carries our tags.
/// A load balancer that is gone is skipped (its Service is reported below); any other failure
/// ends the run before a change.
async fn tagged_clusters<L: LoadBalancing>(
    cloud: &L,
    services: &[&Service],
) -> anyhow::Result<Vec<cluster::Tagged>> {
    let mut tagged = Vec::new();
    for service in services {
        let Some(id) = service.annotations().get(annotations::LOAD_BALANCER_ID) else { continue };
        let (namespace, name) = (service.namespace().unwrap_or_default(), service.name_any());
        let lb = match cloud.load_balancer(id).await {
            Ok(lb) => lb,
            Err(error) if error.is_not_found() => continue,
            Err(error) => {
                let doing = format!("looking up load balancer {id} of Service {namespace}/{name}");
                return Err(anyhow::Error::new(error).context(doing));
            }
        };
        if let Some(cluster) = cluster::tagged(&lb.tags, &namespace, &name) {
            let service = format!("{namespace}/{name}");
            tagged.push(cluster::Tagged { service, load_balancer: lb.id, cluster });
        }
    }
    Ok(tagged)
}

/// One Service: its line, and whether it went through.
async fn migrate(
    cloud: &Arc<OpenStack>,
    args: &MigrateArgs,
    cluster: &str,
    service: &Service,
) -> (String, bool) {
    let (namespace, name) = (service.namespace().unwrap_or_default(), service.name_any());
    let uid = service.metadata.uid.clone().unwrap_or_default();
    let id = ServiceId::new(cluster, &namespace, &name, &uid);
    let annotated = service.annotations().get(annotations::LOAD_BALANCER_ID).map(String::as_str);
    let found = match ownership::find(cloud.as_ref(), &id, annotated).await {
        Ok((found, _)) => found,
        Err(error) => return (format!("failed: {}", crate::cloud::session::chain(&error)), false),
    };
    if found == Found::Nothing && has_address(service) {
        let line = format!(
            "failed: has an address but no load balancer of cluster {cluster:?} was found: is \
             --cluster-name right?"
        );
        return (line, false);
    }
    let others = match &found {
        Found::Own(lb, _) => match cloud.tree(lb.clone()).await {
            Ok(tree) => {
                let tags = id.tags();
                let on = diff::services_on(&tree);
                on.into_iter().filter(|s| !tags.iter().any(|t| t == s)).count()
            }
            Err(error) => {
                return (format!("failed: reading load balancer {}: {error}", lb.id), false);
            }
        },
        _ => 0,
    };
    match step(args.to, &found, others, &id) {
        Step::Done(why) => (why, true),
        Step::Skip(why) => (format!("skipped: {why}"), false),
        Step::Rename { id, from, name, description, tags } => {
            let line = format!("load balancer {id}: {from:?} -> {name:?}");
            if args.dry_run {
                return (format!("{line} (dry run: nothing changed)"), true);
            }
            let change = Change::UpdateLoadBalancer { name, description, tags };
            if let Err(error) = cloud.change(&id, &change).await {
                return (format!("{line}: failed: {error}"), false);
            }
            // One rename at a time: asked for alone (no project to list).
            let renamed = LoadBalancer { id: id.clone(), ..LoadBalancer::default() };
            match wait::Waits::default().active(cloud.as_ref(), &renamed).await {
                Ok(LoadBalancer { .. }) => (line, true),
                Err(error) => (format!("{line}: failed: {error}"), false),
            }
        }
    }
}

/// True when the Service's status holds an address (an ingress IP or hostname).
fn has_address(service: &Service) -> bool {
    let ingress = service.status.as_ref().and_then(|s| s.load_balancer.as_ref());
    ingress
        .and_then(|lb| lb.ingress.as_ref())
        .is_some_and(|list| list.iter().any(|i| i.ip.is_some() || i.hostname.is_some()))
}

mod cluster;
#[cfg(test)]
mod tests;
