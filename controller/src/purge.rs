//! `purge`: deletes what the service controller made for cluster X in OpenStack, whether or not
//! a Service is still there for it, so that tearing a cluster down leaks nothing: its load
//! balancers (cascade), its listeners on load balancers that are not X's (joined through
//! `load-balancer-id`), the floating IPs a controller allocated for them, the security groups
//! it made for their members (taken off the node ports first) and the VIP ports Octavia left
//! behind. Which objects are X's is the service controller's ownership rule (`purge/rule.rs`);
//! with `--kubeconfig` the cluster's Services add what only they can name (a load balancer of the
//! in-tree provider, one `load-balancer-id` names), keep the floating IPs `keep-floatingip`
//! asks to keep, and lose our finalizer once their objects are gone.
//!
//! Everything is read before anything changes; a run that cannot read, or that finds X's
//! objects in more than one project without `--project-id`, changes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams};

use crate::cloud::OpenStack;
use crate::cloud::floating_ips::FloatingIp;
use crate::cloud::load_balancing::{LoadBalancing, Octavia};
use crate::cloud::octavia::{Change, Listener, LoadBalancer};
use crate::cloud::security_groups::SecurityGroup;
use crate::cloud::session::chain;
use crate::controllers::service::names::ServiceId;
use crate::controllers::service::ownership::{self, Found};
use crate::controllers::service::reconcile::wants_load_balancer;
use crate::controllers::service::{FINALIZER, annotations, security_group, vip_port, wait};
use rule::{Named, Verdict};

/// `purge`.
#[derive(Debug, Clone, clap::Args)]
pub struct PurgeArgs {
    /// The CCM's cloud.conf (its credentials; `[Global] secret-name` is read through
    /// `--kubeconfig`).
    #[arg(long = "cloud-config", value_name = "FILE")]
    pub(crate) cloud_config: PathBuf,
    /// The CCM's `--cluster-name` (the infrastructure name of a generated cluster): only what a
    /// controller made for this cluster is deleted.
    #[arg(long = "cluster-name", value_name = "NAME")]
    pub(crate) cluster_name: String,
    /// Also read the cluster's Services: the in-tree provider's load balancers and those
    /// `load-balancer-id` names are found, `keep-floatingip` is honoured, and our finalizer is
    /// removed from each Service whose objects are gone.
    #[arg(long = "kubeconfig", value_name = "FILE")]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// List what would be deleted; change nothing.
    #[arg(long = "dry-run")]
    pub(crate) dry_run: bool,
    /// Also print one line for every object left alone, saying why.
    #[arg(long = "verbose")]
    pub(crate) verbose: bool,
    /// How long a load balancer may stay PENDING_* (before its delete, and until it is gone).
    #[arg(long = "timeout", value_name = "DURATION", default_value = "10m", value_parser = crate::duration::parse)]
    pub(crate) timeout: Duration,
    /// The project to purge. Default: `[Global] tenant-id`, else the credentials' own (an
    /// admin's credentials that see X's objects in several projects must name one).
    #[arg(long = "project-id", value_name = "ID")]
    pub(crate) project_id: Option<String>,
}

/// How a run ended: its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything of the cluster is gone, or nothing was there (exit 0).
    Done = 0,
    /// Something could not be deleted (exit 1); its line says why.
    Failed = 1,
    /// Bad input: nothing was changed (exit 2).
    Refused = 2,
}

/// What a run deletes, read before any change.
#[derive(Debug, Default)]
struct Inventory {
    load_balancers: Vec<(LoadBalancer, Named)>,
    /// Our listeners on load balancers that are not X's (a Service of X joined them through
    /// `load-balancer-id`): they go, the load balancer stays.
    listeners: Vec<(Listener, Named)>,
    floating_ips: Vec<(FloatingIp, Named)>,
    security_groups: Vec<(SecurityGroup, Named)>,
    /// Services that carry our finalizer (with `--kubeconfig`).
    finalized: Vec<Named>,
    /// Lines for what is left alone (`--verbose`).
    left: Vec<String>,
}

impl Inventory {
    fn is_empty(&self) -> bool {
        self.load_balancers.is_empty()
            && self.listeners.is_empty()
            && self.floating_ips.is_empty()
            && self.security_groups.is_empty()
            && self.finalized.is_empty()
    }

    /// The projects of what would be deleted.
    fn projects(&self) -> BTreeSet<&str> {
        let lbs = self.load_balancers.iter().map(|(lb, _)| lb.project_id.as_str());
        let fips = self.floating_ips.iter().map(|(f, _)| f.project_id.as_str());
        let groups = self.security_groups.iter().map(|(g, _)| g.project_id.as_str());
        lbs.chain(fips).chain(groups).filter(|p| !p.is_empty()).collect()
    }
}

/// Runs the command; one line per object on stdout.
pub async fn run(args: PurgeArgs, search: Vec<PathBuf>) -> anyhow::Result<Outcome> {
    let cluster = args.cluster_name.trim().to_owned();
    if cluster.is_empty() {
        return Ok(refused("--cluster-name is empty"));
    }
    let (checked, config) = match crate::oneshot::read_config(&args.cloud_config, &search) {
        Ok(read) => read,
        Err(why) => return Ok(refused(&why)),
    };
    let client = match &args.kubeconfig {
        Some(path) => {
            let refusals = crate::kube::Refused::shared();
            match crate::kube::client(Some(path), None, refusals).await {
                Ok(client) => Some(client),
                Err(e) => {
                    return Ok(refused(&format!("--kubeconfig {}: {}", path.display(), chain(&e))));
                }
            }
        }
        None => None,
    };
    if let (Some(name), Some(namespace), None) =
        (&config.global.secret_name, &config.global.secret_namespace, &client)
    {
        return Ok(refused(&format!(
            "{}: [Global] secret-name names the credentials Secret {namespace}/{name}: reading it \
             needs --kubeconfig",
            args.cloud_config.display()
        )));
    }
    let project =
        args.project_id.clone().or_else(|| crate::config::credentials(&checked.values).project_id);
    let connected = crate::oneshot::login(&checked, &config, client.as_ref()).await?;
    let cloud = connected.cloud.as_ref();
    let services = match &client {
        Some(client) => {
            Api::<Service>::all(client.clone()).list(&ListParams::default()).await?.items
        }
        None => Vec::new(),
    };
    let reading = Reading {
        defaults: annotations::Defaults::from_config(&config.load_balancer),
        classes: config.lb_classes.clone(),
    };
    let inventory = inventory(cloud, &cluster, project.as_deref(), &services, &reading).await?;
    if args.verbose {
        for line in &inventory.left {
            println!("{line}");
        }
    }
    let projects = inventory.projects();
    if project.is_none() && projects.len() > 1 {
        let list: Vec<&str> = projects.into_iter().collect();
        return Ok(refused(&format!(
            "cluster {cluster:?}'s objects are in {} projects ({}): the credentials see more \
             than their own project; pass --project-id",
            list.len(),
            list.join(", ")
        )));
    }
    if inventory.is_empty() {
        println!("nothing of cluster {cluster:?} to delete");
        return Ok(Outcome::Done);
    }
    if args.dry_run {
        for line in plan(&inventory) {
            println!("would {line}");
        }
        println!("dry run: nothing changed");
        return Ok(Outcome::Done);
    }
    let done = delete(cloud, &inventory, args.timeout).await;
    let finalizers_failed = match &client {
        Some(client) => unfinalize(client, &inventory.finalized, &done.services_failed).await,
        None => 0,
    };
    let bad = done.failed + finalizers_failed;
    println!("cluster {cluster:?}: {} deleted, {bad} failed", done.deleted);
    Ok(if bad == 0 { Outcome::Done } else { Outcome::Failed })
}

fn refused(why: &str) -> Outcome {
    eprintln!("openstack-cloud-controller-manager purge: refused, nothing changed: {why}");
    Outcome::Refused
}

/// What a Service's annotations are read against, as the service controller reads them.
struct Reading {
    defaults: annotations::Defaults,
    classes: BTreeMap<String, crate::config::LbClass>,
}

/// Every object of the cluster, by the rule, and what the Services add.
async fn inventory(
    cloud: &OpenStack,
    cluster: &str,
    project: Option<&str>,
    services: &[Service],
    reading: &Reading,
) -> anyhow::Result<Inventory> {
    let mut out = Inventory::default();
    let mut keep = BTreeSet::new();
    for lb in cloud.all_load_balancers(project).await? {
        match rule::load_balancer(&lb, cluster) {
            Verdict::Ours(service) => out.load_balancers.push((lb, service)),
            Verdict::Left(why) => {
                out.left.push(format!("left load balancer {} ({:?}): {why}", lb.id, lb.name))
            }
        }
    }
    for service in services {
        let (namespace, name) = (service.namespace().unwrap_or_default(), service.name_any());
        let named = Named { namespace: namespace.clone(), name: name.clone() };
        let finalized = service.finalizers().iter().any(|f| f == FINALIZER);
        if finalized {
            out.finalized.push(named.clone());
        }
        if !wants_load_balancer(service) && !finalized {
            continue;
        }
        // As the controller's clean-up reads them (broken annotations never keep it from going).
        let settings = annotations::settings_for_cleanup(
            service.annotations(),
            &reading.defaults,
            &reading.classes,
        );
        if settings.keep_floating_ip {
            keep.insert(named.clone());
        }
        let uid = service.metadata.uid.clone().unwrap_or_default();
        let id = ServiceId::new(cluster, &namespace, &name, &uid);
        let annotated = settings.load_balancer_id.as_deref();
        // Found already by the rule (by the annotated ID, or by its name): no lookup.
        let listed = out.load_balancers.iter().any(|(lb, _)| {
            Some(lb.id.as_str()) == annotated
                || (annotated.is_none() && lb.name == id.load_balancer())
        });
        if listed {
            continue;
        }
        let found = ownership::find(cloud, &id, annotated)
            .await
            .map_err(|e| anyhow::anyhow!("Service {named}: {}", chain(&e)))?;
        if let (Found::Own(lb, _), _) = found
            && !out.load_balancers.iter().any(|(have, _)| have.id == lb.id)
        {
            out.load_balancers.push((lb, named));
        }
    }
    let filter: Vec<(&'static str, String)> =
        project.map(|p| ("project_id", p.to_owned())).into_iter().collect();
    let fips = cloud.floating_ips(&filter).await?;
    for fip in fips {
        let on = out
            .load_balancers
            .iter()
            .find(|(lb, _)| Some(lb.vip_port_id.as_str()) == fip.port_id.as_deref());
        let verdict = match (rule::floating_ip(&fip, cluster), on) {
            (Verdict::Left(_), Some((lb, service))) => {
                let id = ServiceId::new(cluster, &service.namespace, &service.name, "");
                if ownership::floating_ip_is_own(&fip, lb, &id) {
                    Verdict::Ours(service.clone())
                } else {
                    Verdict::Left(format!("a user's, on load balancer {}: left allocated", lb.id))
                }
            }
            (verdict, _) => verdict,
        };
        match verdict {
            Verdict::Ours(service) if keep.contains(&service) => out.left.push(format!(
                "left floating IP {} ({}): Service {service} asks keep-floatingip",
                fip.floating_ip_address, fip.id
            )),
            Verdict::Ours(service) => out.floating_ips.push((fip, service)),
            Verdict::Left(why) => out
                .left
                .push(format!("left floating IP {} ({}): {why}", fip.floating_ip_address, fip.id)),
        }
    }
    let ours: BTreeSet<&str> = out.load_balancers.iter().map(|(lb, _)| lb.id.as_str()).collect();
    let mut joined = Vec::new();
    for listener in cloud.all_listeners(project).await? {
        let on = listener.loadbalancers.first().map(|lb| lb.id.as_str()).unwrap_or_default();
        if let Some(service) = rule::listener(&listener, cluster).filter(|_| !ours.contains(on)) {
            joined.push((listener, service));
        }
    }
    out.listeners = joined;
    for group in cloud.all_security_groups(project).await? {
        match rule::security_group(&group, cluster) {
            Verdict::Ours(service) => out.security_groups.push((group, service)),
            Verdict::Left(why) => {
                out.left.push(format!("left security group {} ({:?}): {why}", group.id, group.name))
            }
        }
    }
    out.load_balancers.sort_by(|a, b| (&a.1, &a.0.id).cmp(&(&b.1, &b.0.id)));
    out.floating_ips.sort_by(|a, b| (&a.1, &a.0.id).cmp(&(&b.1, &b.0.id)));
    out.security_groups.sort_by(|a, b| (&a.1, &a.0.id).cmp(&(&b.1, &b.0.id)));
    out.finalized.sort();
    Ok(out)
}

/// One line per change, in the order they are made.
fn plan(inventory: &Inventory) -> Vec<String> {
    let fips =
        inventory.floating_ips.iter().map(|(f, s)| format!("release {}", floating_ip_line(f, s)));
    let lbs = inventory
        .load_balancers
        .iter()
        .map(|(lb, s)| format!("delete {}", load_balancer_line(lb, s)));
    let listeners =
        inventory.listeners.iter().map(|(l, s)| format!("delete {}", listener_line(l, s)));
    let groups =
        inventory.security_groups.iter().map(|(g, s)| format!("delete {}", group_line(g, s)));
    let finalizers =
        inventory.finalized.iter().map(|s| format!("remove finalizer {FINALIZER} of Service {s}"));
    fips.chain(listeners).chain(lbs).chain(groups).chain(finalizers).collect()
}

fn listener_line(listener: &Listener, service: &Named) -> String {
    let on = listener.loadbalancers.first().map(|lb| lb.id.as_str()).unwrap_or_default();
    format!(
        "listener {} ({:?}, {}/{}) on load balancer {on} (not the cluster's: it stays) of Service {service}",
        listener.id, listener.name, listener.protocol, listener.protocol_port
    )
}

fn floating_ip_line(fip: &FloatingIp, service: &Named) -> String {
    format!("floating IP {} ({}) of Service {service}", fip.floating_ip_address, fip.id)
}

fn load_balancer_line(lb: &LoadBalancer, service: &Named) -> String {
    format!("load balancer {} ({:?}) of Service {service}", lb.id, lb.name)
}

fn group_line(group: &SecurityGroup, service: &Named) -> String {
    format!("security group {} ({:?}) of Service {service}", group.id, group.name)
}

/// What [`delete`] did: objects deleted, objects that could not be, and their Services.
#[derive(Debug, Default)]
struct Deleted {
    deleted: usize,
    failed: usize,
    services_failed: BTreeSet<Named>,
}

/// Deletes everything, floating IPs first (their load balancers' VIP ports go with them), then
/// the load balancers, the VIP ports Octavia left, the security groups.
async fn delete(cloud: &OpenStack, inventory: &Inventory, timeout: Duration) -> Deleted {
    let mut done = Deleted::default();
    let mut report =
        |result: Result<(), String>, line: String, service: &Named, verb: &str| match result {
            Ok(()) => {
                println!("{verb} {line}");
                done.deleted += 1;
            }
            Err(why) => {
                println!("failed to delete {line}: {why}");
                done.failed += 1;
                done.services_failed.insert(service.clone());
            }
        };
    for (fip, service) in &inventory.floating_ips {
        let result = gone_ok(cloud.delete_floating_ip(&fip.id).await);
        report(result, floating_ip_line(fip, service), service, "released");
    }
    let waits = wait::Waits::new(timeout);
    for (listener, service) in &inventory.listeners {
        let result = delete_listener(cloud, &waits, listener).await;
        report(result, listener_line(listener, service), service, "deleted");
    }
    let deletes =
        inventory.load_balancers.iter().map(|(lb, _)| delete_load_balancer(cloud, &waits, lb));
    let results = futures::future::join_all(deletes).await;
    let mut gone = Vec::new();
    for ((lb, service), result) in inventory.load_balancers.iter().zip(results) {
        if result.is_ok() {
            gone.push(lb);
        }
        report(result, load_balancer_line(lb, service), service, "deleted");
    }
    // The VIP ports Octavia left behind: one list of its ports for every load balancer gone.
    let octavia_ports = match gone.is_empty() {
        true => Ok(Vec::new()),
        false => cloud.octavia_ports().await,
    };
    for lb in gone {
        let service =
            &inventory.load_balancers.iter().find(|(l, _)| l.id == lb.id).expect("listed").1;
        match &octavia_ports {
            Ok(ports) => {
                for port in vip_port::left_behind(&lb.id, ports) {
                    let line = format!(
                        "port {} ({:?}, the VIP port Octavia left) of Service {service}",
                        port.id, port.name
                    );
                    report(gone_ok(cloud.delete_port(&port.id).await), line, service, "deleted");
                }
            }
            Err(e) => {
                let line = format!("the VIP port of load balancer {}", lb.id);
                report(Err(chain(e)), line, service, "deleted");
            }
        }
    }
    for (group, service) in &inventory.security_groups {
        let result = security_group::delete_group(cloud, group).await.map_err(|e| chain(&e));
        report(result, group_line(group, service), service, "deleted");
    }
    done
}

/// A delete that found the object gone already succeeded.
fn gone_ok(result: crate::cloud::Result<()>) -> Result<(), String> {
    match result {
        Ok(()) => Ok(()),
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(chain(&e)),
    }
}

/// Our listener on a load balancer that stays: its pool (with its members and monitor), then
/// the listener, each after the load balancer is `ACTIVE`.
async fn delete_listener(
    cloud: &OpenStack,
    waits: &wait::Waits,
    listener: &Listener,
) -> Result<(), String> {
    let Some(on) = listener.loadbalancers.first() else { return Ok(()) };
    let lb = LoadBalancer { id: on.id.clone(), ..LoadBalancer::default() };
    let mut changes = Vec::new();
    if let Some(pool_id) = listener.default_pool_id.clone() {
        changes.push(Change::DeletePool { pool_id });
    }
    changes.push(Change::DeleteListener { listener_id: listener.id.clone() });
    for change in &changes {
        waits.active(cloud, &lb).await.map_err(|e| chain(&e))?;
        gone_ok(Octavia::change(cloud, &lb.id, change).await.map(drop))?;
    }
    waits.active(cloud, &lb).await.map(drop).map_err(|e| chain(&e))
}

/// One load balancer: waited for while `PENDING_*`, deleted with everything under it, waited
/// for until gone.
async fn delete_load_balancer(
    cloud: &OpenStack,
    waits: &wait::Waits,
    lb: &LoadBalancer,
) -> Result<(), String> {
    let lb = if lb.provisioning_status.starts_with("PENDING_") {
        waits.settled(cloud, lb).await.map_err(|e| chain(&e))?
    } else {
        lb.clone()
    };
    if lb.provisioning_status == "PENDING_DELETE" {
        return waits.gone(cloud, &lb).await.map_err(|e| chain(&e));
    }
    gone_ok(Octavia::delete(cloud, &lb.id).await)?;
    waits.gone(cloud, &lb).await.map_err(|e| chain(&e))
}

/// Our finalizer off each Service whose objects all went: the number that could not be
/// changed.
async fn unfinalize(client: &kube::Client, services: &[Named], failed: &BTreeSet<Named>) -> usize {
    let mut bad = 0;
    for service in services {
        if failed.contains(service) {
            println!(
                "kept finalizer {FINALIZER} of Service {service}: its objects are not all gone"
            );
            bad += 1;
            continue;
        }
        let api = Api::<Service>::namespaced(client.clone(), &service.namespace);
        let result = remove_finalizer(&api, &service.name).await;
        match result {
            Ok(()) => println!("removed finalizer {FINALIZER} of Service {service}"),
            Err(why) => {
                println!("failed to remove finalizer {FINALIZER} of Service {service}: {why}");
                bad += 1;
            }
        }
    }
    bad
}

/// Removes our finalizer, guarded by a JSON-patch `test` of its place (another writer's change
/// to the list makes it fail, and it is read again, up to three times).
async fn remove_finalizer(api: &Api<Service>, name: &str) -> Result<(), String> {
    for _ in 0..3 {
        let service = match api.get_opt(name).await {
            Ok(Some(service)) => service,
            Ok(None) => return Ok(()),
            Err(e) => return Err(chain(&e)),
        };
        let Some(index) = service.finalizers().iter().position(|f| f == FINALIZER) else {
            return Ok(());
        };
        let path = format!("/metadata/finalizers/{index}");
        let ops = serde_json::json!([{"op": "test", "path": path, "value": FINALIZER}, {"op": "remove", "path": path}]);
        let patch = serde_json::from_value(ops).map_err(|e| e.to_string())?;
        match api.patch(name, &PatchParams::default(), &Patch::Json::<()>(patch)).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(e)) if e.code == 422 || e.code == 409 => continue,
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
            Err(e) => return Err(chain(&e)),
        }
    }
    Err("the Service's finalizers changed three times while being written".to_owned())
}

mod rule;
