//! `openstack-cloud-controller-manager purge` against the real Octavia and Neutron (issue 41,
//! part 1; ignored by default, scripts/test.sh runs it): two clusters' Services with floating
//! IPs and member security groups, and a look-alike load balancer with cluster X's name and none
//! of our marks; purge X leaves nothing of X, all of Y and the look-alike as they were.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{ingress_ip, lb_list, node, start_with, until};
use crate::support::{process_bin, scene};

/// Runs `purge` with the files of a controller run in `dir` (its cloud.conf, and its
/// kubeconfig with `kube`): exit code, stdout lines sorted, stderr.
fn purge(
    dir: &Path,
    cluster: &str,
    kube: bool,
    extra: &[&str],
) -> (Option<i32>, Vec<String>, String) {
    let out = Command::new(process_bin())
        .arg("purge")
        .arg(format!("--cloud-config={}", dir.join("cloud.conf").display()))
        .arg(format!("--cluster-name={cluster}"))
        .args(kube.then(|| format!("--kubeconfig={}", dir.join("kubeconfig").display())))
        .args(extra)
        .output()
        .unwrap();
    let mut lines: Vec<String> =
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect();
    lines.sort();
    (out.status.code(), lines, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// What the project holds that `keep` picks (by a load balancer's name, a floating IP's
/// description, a security group's name: other tests run beside this one), each kind sorted by
/// that text and the ID.
#[derive(Debug, Clone, PartialEq)]
struct Inventory {
    load_balancers: Vec<(String, String)>,
    floating_ips: Vec<(String, String)>,
    security_groups: Vec<(String, String)>,
}

impl Inventory {
    async fn read(env: &StackEnv, keep: &dyn Fn(&str) -> bool) -> Inventory {
        let pairs = |list: Value, text: &str| {
            let mut out: Vec<(String, String)> = list
                .as_array()
                .unwrap()
                .iter()
                .map(|x| {
                    let field = |k: &str| x[k].as_str().unwrap_or_default().to_owned();
                    (field(text), field("id"))
                })
                .collect();
            out.sort();
            out
        };
        Inventory {
            load_balancers: pairs(scene(env, &["loadbalancer-list"]).await, "name"),
            floating_ips: pairs(scene(env, &["floating-ip-list"]).await, "description"),
            security_groups: pairs(scene(env, &["security-group-list"]).await, "name"),
        }
        .only(keep)
    }

    /// The entries whose text `keep` picks.
    fn only(&self, keep: &dyn Fn(&str) -> bool) -> Inventory {
        let only = |v: &[(String, String)]| v.iter().filter(|(t, _)| keep(t)).cloned().collect();
        Inventory {
            load_balancers: only(&self.load_balancers),
            floating_ips: only(&self.floating_ips),
            security_groups: only(&self.security_groups),
        }
    }

    fn counts(&self) -> (usize, usize, usize) {
        (self.load_balancers.len(), self.floating_ips.len(), self.security_groups.len())
    }

    fn ids(&self) -> Vec<&str> {
        let all = self.load_balancers.iter().chain(&self.floating_ips).chain(&self.security_groups);
        all.map(|(_, id)| id.as_str()).collect()
    }
}

/// Picks a cluster's objects: its load balancers and floating IPs by name and description,
/// its Services' security groups by their UIDs.
fn of_cluster(cluster: &str, fake: &Cluster, services: &[&str]) -> impl Fn(&str) -> bool + use<> {
    let names: Vec<String> =
        services.iter().map(|s| format!("kube_service_{cluster}_shop_{s}")).collect();
    let described = format!(" from cluster {cluster}");
    let groups: Vec<String> = services
        .iter()
        .map(|s| {
            let uid = fake.get("v1", "services", "shop", s).unwrap()["metadata"]["uid"].clone();
            format!("lb-sg-{}-shop-{s}", uid.as_str().unwrap())
        })
        .collect();
    move |text: &str| {
        names.iter().any(|n| n == text)
            || text.ends_with(&described)
            || groups.iter().any(|g| g == text)
    }
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn purge_deletes_everything_of_one_cluster_and_nothing_else() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let (ip_x, ip_y) = ("10.0.0.196", "10.0.0.197");
    let port_x = scene(&env, &["port-create", "--fixed-ip", ip_x]).await;
    let port_y = scene(&env, &["port-create", "--fixed-ip", ip_y]).await;
    let groups_of = async |port: &Value| {
        let port = scene(&env, &["port-show", port["id"].as_str().unwrap()]).await;
        let mut groups: Vec<String> = port["security_groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_str().unwrap().to_owned())
            .collect();
        groups.sort();
        groups
    };
    let own_groups_x = groups_of(&port_x).await;
    let conf = format!(
        "subnet-id = {}\nfloating-network-id = {}\nmanage-security-groups = true\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"]
    );
    let cloud = &env["OPENSTACK_CLOUD_APPCRED"];
    // Cluster X: two Services. Cluster Y: one, with the same namespace and name as one of X's.
    let x = Cluster::start();
    x.create("v1", "nodes", "", node("purge-x", ip_x));
    for (name, node_port) in [("web", 30196), ("api", 30197)] {
        x.create("v1", "services", "shop", load_balancer_service("shop", name, &[(80, node_port)]));
    }
    let y = Cluster::start();
    y.create("v1", "nodes", "", node("purge-y", ip_y));
    y.create("v1", "services", "shop", load_balancer_service("shop", "web", &[(80, 30198)]));
    let (mut process_x, cluster_x, dir_x) = start_with(&env, &x, cloud, "purgex", &conf);
    let (mut process_y, cluster_y, dir_y) = start_with(&env, &y, cloud, "purgey", &conf);
    for name in ["web", "api"] {
        ingress_ip(&x, &process_x, "shop", name).await;
    }
    ingress_ip(&y, &process_y, "shop", "web").await;
    // The security groups are on the ports once the rules are made: wait for both clusters'.
    until("X's groups on its node's port", &process_x, async || {
        (groups_of(&port_x).await.len() == own_groups_x.len() + 2).then_some(())
    })
    .await;
    until("Y's group on its node's port", &process_y, async || {
        (groups_of(&port_y).await.len() > 1).then_some(())
    })
    .await;
    // A look-alike: X's name for a Service, made by hand, without our marks.
    let decoy_name = format!("kube_service_{cluster_x}_shop_decoy");
    let decoy = scene(&env, &["loadbalancer-create", "--name", &decoy_name]).await;
    let decoy_id = decoy["id"].as_str().unwrap().to_owned();
    // A Service of X joins it through load-balancer-id: its listener goes on someone else's
    // load balancer, which purge must leave standing without that listener.
    let mut joiner = load_balancer_service("shop", "joiner", &[(8080, 30195)]);
    joiner["metadata"]["annotations"] =
        serde_json::json!({"loadbalancer.openstack.org/load-balancer-id": decoy_id});
    x.create("v1", "services", "shop", joiner);
    ingress_ip(&x, &process_x, "shop", "joiner").await;
    until("the joiner's listener and group", &process_x, async || {
        let lbs = lb_list(&env, &decoy_name).await;
        let listening = lbs[0]["listeners"].as_array()?.len() == 1;
        (listening && groups_of(&port_x).await.len() == own_groups_x.len() + 3).then_some(())
    })
    .await;
    // The controllers are gone, as in a teardown; X's Services keep our finalizer.
    process_x.kill().await;
    process_y.kill().await;
    // Octavia loses track of the VIP port of X's shop/api, as a create it reverted half-way
    // leaves it: its delete leaves the port, which purge then deletes.
    let api = format!("kube_service_{cluster_x}_shop_api");
    let api_id =
        crate::load_balancer::lb_list(&env, &api).await[0]["id"].as_str().unwrap().to_owned();
    scene(&env, &["loadbalancer-break", &api_id, "--status", "ACTIVE", "--lose-vip-port"]).await;

    let is_x = of_cluster(&cluster_x, &x, &["web", "api", "joiner"]);
    let is_y = of_cluster(&cluster_y, &y, &["web"]);
    let tracked = |t: &str| is_x(t) || is_y(t) || t == decoy_name;
    let before = Inventory::read(&env, &tracked).await;
    let of_x = before.only(&is_x);
    let of_y = before.only(&is_y);
    assert_eq!(of_x.counts(), (2, 2, 3), "X's objects before the purge: {before:#?}");
    assert_eq!(of_y.counts(), (1, 1, 1), "Y's objects before the purge: {before:#?}");

    // A dry run lists them and changes nothing.
    let (code, lines, stderr) = purge(dir_x.path(), &cluster_x, true, &["--dry-run"]);
    assert_eq!(code, Some(0), "{lines:#?}\n{stderr}");
    let would: Vec<&String> = lines.iter().filter(|l| l.starts_with("would ")).collect();
    // 2 floating IPs, the joiner's listener, 2 load balancers, 3 groups, 3 finalizers.
    assert_eq!(would.len(), 2 + 1 + 2 + 3 + 3, "{lines:#?}");
    assert!(lines.contains(&"dry run: nothing changed".to_owned()), "{lines:#?}");
    assert_eq!(Inventory::read(&env, &tracked).await, before, "a dry run changed something");

    // The purge: every one of X's objects gone, nothing else touched.
    let (code, lines, stderr) = purge(dir_x.path(), &cluster_x, true, &["--verbose"]);
    assert_eq!(code, Some(0), "{lines:#?}\n{stderr}");
    for id in of_x.ids() {
        let deleted = |l: &&String| l.contains(id) && !l.starts_with("left ");
        assert!(lines.iter().any(|l| deleted(&l)), "{id}: {lines:#?}");
    }
    let vip_port =
        format!("\"octavia-lb-{api_id}\", the VIP port Octavia left) of Service shop/api");
    assert!(
        lines.iter().any(|l| l.starts_with("deleted port ") && l.ends_with(&vip_port)),
        "{lines:#?}"
    );
    let left = format!("left load balancer {decoy_id} ");
    let decoy_line =
        lines.iter().find(|l| l.starts_with(&left)).unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(decoy_line.contains("look-alike"), "{decoy_line}");
    let listener = "(not the cluster's: it stays) of Service shop/joiner";
    let joined = |l: &&String| l.starts_with("deleted listener ") && l.contains(&decoy_id);
    assert!(lines.iter().filter(joined).any(|l| l.ends_with(listener)), "{lines:#?}");
    let after = Inventory::read(&env, &tracked).await;
    assert_eq!(after, before.only(&|t: &str| !is_x(t)), "{lines:#?}");
    assert_eq!(
        groups_of(&port_x).await,
        own_groups_x,
        "the node's port kept a group of X, or lost its own"
    );
    let decoy_now = lb_list(&env, &decoy_name).await;
    assert_eq!(decoy_now[0]["id"], decoy_id.as_str(), "the look-alike went");
    assert_eq!(decoy_now[0]["listeners"], serde_json::json!([]), "X's listener stayed on it");
    assert_eq!(decoy_now[0]["pools"], serde_json::json!([]), "X's pool stayed on it");
    for name in ["web", "api", "joiner"] {
        let service = x.get("v1", "services", "shop", name).unwrap();
        // The emptied list is left out, as a real API server leaves it out.
        assert_eq!(service["metadata"].get("finalizers"), None, "{service}");
    }
    assert!(
        lines.iter().any(|l| l == &format!("cluster {cluster_x:?}: 9 deleted, 0 failed")),
        "{lines:#?}"
    );

    // Twice: nothing left, and it says so.
    let (code, lines, _) = purge(dir_x.path(), &cluster_x, false, &[]);
    assert_eq!(
        (code, lines),
        (Some(0), vec![format!("nothing of cluster {cluster_x:?} to delete")])
    );

    // Y's and the look-alike go by other means (Y by its own purge, without --kubeconfig).
    let (code, lines, stderr) = purge(dir_y.path(), &cluster_y, false, &[]);
    assert_eq!(code, Some(0), "{lines:#?}\n{stderr}");
    assert!(
        lines.iter().any(|l| l == &format!("cluster {cluster_y:?}: 3 deleted, 0 failed")),
        "{lines:#?}"
    );
    scene(&env, &["loadbalancer-delete", &decoy_id]).await;
    for port in [&port_x, &port_y] {
        scene(&env, &["port-delete", port["id"].as_str().unwrap()]).await;
    }
}

/// A load balancer Octavia keeps `PENDING_UPDATE` is waited for, up to `--timeout`: past it the
/// run fails (exit 1) naming it, and the Service keeps our finalizer; one that settles within
/// the timeout is deleted.
#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_pending_load_balancer_is_waited_for_within_the_timeout_and_fails_the_run_past_it() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("purge-slow", "10.0.0.199"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "slow", &[(80, 30199)]));
    let conf = format!("subnet-id = {}\n", env["OPENSTACK_INTERNAL_SUBNET_ID"]);
    let cloud = &env["OPENSTACK_CLOUD_APPCRED"];
    let (mut process, cluster, dir) = start_with(&env, &fake, cloud, "purgeslow", &conf);
    ingress_ip(&fake, &process, "shop", "slow").await;
    process.kill().await;
    let name = format!("kube_service_{cluster}_shop_slow");
    let id = lb_list(&env, &name).await[0]["id"].as_str().unwrap().to_owned();
    let pending = ["loadbalancer-break", &id, "--status", "PENDING_UPDATE"];
    assert_eq!(scene(&env, &pending).await["provisioning_status"], "PENDING_UPDATE");

    let (code, lines, stderr) = purge(dir.path(), &cluster, true, &["--timeout=3s"]);
    assert_eq!(code, Some(1), "{lines:#?}\n{stderr}");
    let failed = format!("failed to delete load balancer {id} ({name:?}) of Service shop/slow: ");
    let line =
        lines.iter().find(|l| l.starts_with(&failed)).unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(line.contains("still PENDING_UPDATE after 3 s"), "{line}");
    let kept = "kept finalizer service.kubernetes.io/load-balancer-cleanup of Service shop/slow: \
                its objects are not all gone";
    assert!(lines.iter().any(|l| l == kept), "{lines:#?}");
    assert_eq!(lb_list(&env, &name).await[0]["id"], id.as_str(), "deleted while PENDING");
    let service = fake.get("v1", "services", "shop", "slow").unwrap();
    assert_eq!(service["metadata"]["finalizers"][0], "service.kubernetes.io/load-balancer-cleanup");

    // Octavia finishes 3 s into the next run: waited for, then deleted.
    let settle = {
        let (env, id) = (StackEnv::load(), id.clone());
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
            scene(&env, &["loadbalancer-break", &id, "--status", "ACTIVE"]).await;
        })
    };
    let run = tokio::task::spawn_blocking({
        let (dir, cluster) = (dir.path().to_owned(), cluster.clone());
        move || purge(&dir, &cluster, true, &["--timeout=60s"])
    });
    let (code, lines, stderr) = run.await.unwrap();
    settle.await.unwrap();
    assert_eq!(code, Some(0), "{lines:#?}\n{stderr}");
    assert!(
        lines.iter().any(|l| l.starts_with(&format!("deleted load balancer {id}"))),
        "{lines:#?}"
    );
    assert_eq!(lb_list(&env, &name).await, serde_json::json!([]));
}
