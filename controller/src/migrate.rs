//! `migrate-load-balancers`: hands every Service's load balancer to the in-tree provider
//! (`--to in-tree`, before a downgrade) or takes it back (`--to external`), by renaming it in
//! place: the in-tree provider looks a load balancer up only by `a<uid32>`, so without this a
//! downgrade gives every Service made under this controller a second load balancer and a new
//! address. The same ID, VIP, floating IP and listeners stay; our tags stay too, so that this
//! controller knows the load balancer again when it comes back (with or without `--to
//! external`). Shared load balancers cannot be handed back: the in-tree provider has no
//! sharing.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use k8s_openapi::api::core::v1::{Secret, Service};
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use crate::cloud::OpenStack;
use crate::cloud::load_balancing::LoadBalancing;
use crate::cloud::octavia::{ACTIVE, Change, LoadBalancer};
use crate::controllers::service::desired::ServiceId;
use crate::controllers::service::ownership::{self, Found, Maker};
use crate::controllers::service::reconcile::wants_load_balancer;
use crate::controllers::service::{annotations, diff, names, wait};
use crate::metrics::Metrics;

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
    /// The CCM's `--cluster-name` (part of its load-balancer names).
    #[arg(long = "cluster-name", value_name = "NAME", default_value = "kubernetes")]
    pub(crate) cluster_name: String,
    /// Print what would change; change nothing.
    #[arg(long = "dry-run")]
    pub(crate) dry_run: bool,
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
    let ours = names::load_balancer(service.cluster, service.namespace, service.name);
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
        Target::External => {
            (ours.clone(), names::description(service.cluster, service.namespace, service.name))
        }
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

/// Runs the command; `Ok(true)` when every Service went through.
pub async fn run(args: MigrateArgs, search: Vec<PathBuf>) -> anyhow::Result<bool> {
    let checked = crate::config::load(&args.cloud_config, &search)?;
    let errors = checked.errors();
    if !errors.is_empty() {
        bail!("{}: {}", args.cloud_config.display(), errors.join("; "));
    }
    let config = checked.config(&args.cloud_config.display().to_string())?;
    let client =
        crate::kube::client(args.kubeconfig.as_deref(), None, crate::kube::Refused::shared())
            .await?;
    let mut credentials = crate::config::credentials(&checked.values);
    if let (Some(name), Some(namespace)) =
        (&config.global.secret_name, &config.global.secret_namespace)
    {
        let secret = Api::<Secret>::namespaced(client.clone(), namespace)
            .get(name)
            .await
            .with_context(|| format!("reading the credentials Secret {namespace}/{name}"))?;
        let origin = format!("secret {namespace}/{name}");
        credentials = crate::kube::secret::credentials(&checked.values, &secret, &origin)
            .map_err(anyhow::Error::msg)?
            .1;
    }
    let cloud = OpenStack::new(Metrics::shared(), config.metadata.request_timeout);
    cloud.set_credentials(credentials);
    let connector = tokio::spawn(cloud.clone().keep_connected());
    let mut ready = cloud.subscribe_ready();
    let login = tokio::time::timeout(Duration::from_secs(60), ready.wait_for(|r| *r)).await;
    if !matches!(login, Ok(Ok(_))) {
        connector.abort();
        let reason = cloud.readiness().err().unwrap_or_default();
        bail!("cannot log in to OpenStack within 60 s: {reason}");
    }
    let services = Api::<Service>::all(client).list(&ListParams::default()).await?;
    let mut all_ok = true;
    for service in services.items.iter().filter(|s| wants_load_balancer(s)) {
        let (line, ok) = migrate(&cloud, &args, service).await;
        println!("{}/{}: {line}", service.namespace().unwrap_or_default(), service.name_any());
        all_ok &= ok;
    }
    connector.abort();
    Ok(all_ok)
}

/// One Service: its line, and whether it went through.
async fn migrate(cloud: &Arc<OpenStack>, args: &MigrateArgs, service: &Service) -> (String, bool) {
    let (namespace, name) = (service.namespace().unwrap_or_default(), service.name_any());
    let uid = service.metadata.uid.clone().unwrap_or_default();
    let id =
        ServiceId { cluster: &args.cluster_name, namespace: &namespace, name: &name, uid: &uid };
    let annotated = service.annotations().get(annotations::LOAD_BALANCER_ID).map(String::as_str);
    let found = match ownership::find(cloud.as_ref(), &id, annotated).await {
        Ok((found, _)) => found,
        Err(error) => return (format!("failed: {}", crate::cloud::session::chain(&error)), false),
    };
    let others = match &found {
        Found::Own(lb, _) => match cloud.tree(lb.clone()).await {
            Ok(tree) => {
                let tags = ownership::service_tags(&id);
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
            match wait::active(cloud.as_ref(), &id, wait::LIMIT).await {
                Ok(LoadBalancer { .. }) => (line, true),
                Err(error) => (format!("{line}: failed: {error}"), false),
            }
        }
    }
}

#[cfg(test)]
mod tests;
