//! Leader election on a real Lease of the real API server (scripts/kube-up.sh): two CCM
//! binaries, each with a client certificate of its own (so the audit log tells their requests
//! apart), on a Lease in a namespace of the test's (and, with `--enable-leader-migration`, the
//! migration Lease beside it). Keystone is unreachable and only the node controller is enabled:
//! the processes touch nothing of the shared cluster but their Leases.

mod rollout;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::kube_stack::{KubeStack, request, unique};

use crate::support::{Process, free_port, start_with_kubeconfig};

const LEASE: &str = "cloud-controller-manager";
/// Upstream's default migration Lease (`--enable-leader-migration` without a file).
const MIGRATION: &str = "cloud-provider-extraction-migration";

/// The binary against the real API server as `kubeconfig`'s user, its Lease in `namespace`.
pub(crate) fn start_real(
    dir: &Path,
    kubeconfig: &Path,
    namespace: &str,
    extra: &[&str],
) -> Process {
    let conf = dir.join("cloud.conf");
    let keystone = free_port();
    let text = format!(
        "[Global]\nauth-url = http://127.0.0.1:{keystone}/v3\nusername = u\npassword = p\ntenant-name = p\n"
    );
    std::fs::write(&conf, text).unwrap();
    let lease = format!("--leader-elect-resource-namespace={namespace}");
    let mut flags = vec![lease.as_str()];
    flags.extend(extra);
    start_with_kubeconfig(&conf, kubeconfig, &flags)
}

fn lease(stack: &KubeStack, namespace: &str) -> Value {
    named_lease(stack, namespace, LEASE)
}

fn named_lease(stack: &KubeStack, namespace: &str, name: &str) -> Value {
    stack.get("lease", Some(namespace), name).expect("the Lease exists")
}

fn holder(lease: &Value) -> &str {
    lease["spec"]["holderIdentity"].as_str().unwrap_or_default()
}

/// `Some` when `id` holds every Lease of `names`.
fn holds(stack: &KubeStack, namespace: &str, names: &[&str], id: &str) -> Option<()> {
    let mut leases = names.iter().map(|name| stack.get("lease", Some(namespace), name));
    leases.all(|l| l.is_some_and(|l| holder(&l) == id)).then_some(())
}

/// The identity an "acquired lease" line names.
fn identity(line: &str) -> String {
    let start = line.find("identity=").expect("the line names the identity") + "identity=".len();
    line[start..].split_whitespace().next().unwrap().trim_matches('"').to_owned()
}

fn lease_requests(events: &[Value], user: &str, namespace: &str) -> Vec<(String, u64)> {
    named_lease_requests(events, user, namespace).into_iter().map(|(r, _, c)| (r, c)).collect()
}

/// `user`'s requests on Leases in `namespace`: request, Lease name, response code.
fn named_lease_requests(
    events: &[Value],
    user: &str,
    namespace: &str,
) -> Vec<(String, String, u64)> {
    events
        .iter()
        .filter(|e| e["user"]["username"] == user && e["objectRef"]["namespace"] == namespace)
        .filter(|e| e["objectRef"]["resource"] == "leases")
        .map(|e| {
            let name = e["objectRef"]["name"].as_str().unwrap_or_default().to_owned();
            (request(e), name, e["responseStatus"]["code"].as_u64().unwrap_or_default())
        })
        .collect()
}

/// Polls `check` every 200 ms for up to `limit`; what it found, or a panic saying `what`.
async fn until<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A long lease: a takeover that waited for it to expire would take a minute; a released one is
/// taken at the next retry.
const TIMING: [&str; 3] = [
    "--leader-elect-lease-duration=60s",
    "--leader-elect-renew-deadline=40s",
    "--leader-elect-retry-period=1s",
];

/// Two binaries on the Leases of one namespace, each with a client certificate of its own: A
/// holds `leases`, B is a candidate that has read them again and again.
struct Candidates {
    a: Process,
    b: Process,
    a_id: String,
    user_a: String,
    user_b: String,
    _dirs: [tempfile::TempDir; 3],
}

impl Candidates {
    /// Starts A with `flags` (plus [`TIMING`]) and waits until it holds every Lease of
    /// `leases`; then B, until it has read them three times.
    async fn start(stack: &KubeStack, ns: &str, flags: &[&str], leases: &[&str]) -> Candidates {
        let audit = stack.audit();
        let dirs = [(); 3].map(|()| tempfile::tempdir().unwrap());
        let (user_a, user_b) = (unique("ccm-a"), unique("ccm-b"));
        let flags: Vec<&str> =
            ["--controllers=cloud-node"].iter().chain(&TIMING).chain(flags).copied().collect();
        let config_a = stack.client_kubeconfig(dirs[0].path(), &user_a, &["system:masters"]);
        let config_b = stack.client_kubeconfig(dirs[0].path(), &user_b, &["system:masters"]);
        let a = start_real(dirs[1].path(), &config_a, ns, &flags);
        let a_id = identity(&a.wait_line("acquired lease", Duration::from_secs(60)).await);
        until("A holds its Leases", Duration::from_secs(60), || holds(stack, ns, leases, &a_id))
            .await;
        let b = start_real(dirs[2].path(), &config_b, ns, &flags);
        audit.wait_for(Duration::from_secs(60), |events| {
            let reads = lease_requests(events, &user_b, ns);
            reads.iter().filter(|(r, _)| r == "get coordination.k8s.io/leases").count() >= 3
        });
        Candidates { a, b, a_id, user_a, user_b, _dirs: dirs }
    }
}

#[tokio::test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
async fn the_leader_releases_its_lease_on_sigterm_and_the_other_takes_over() {
    let stack = KubeStack::load();
    let namespace = stack.namespace("ccm-leader");
    let ns = namespace.name.as_str();
    let audit = stack.audit();
    let Candidates { mut a, mut b, a_id, user_a, user_b, _dirs } =
        Candidates::start(&stack, ns, &[], &[LEASE]).await;
    // B reads the Lease again and again, and never takes it while A renews.
    let held = lease(&stack, ns);
    assert_eq!(held["spec"]["holderIdentity"], a_id.as_str(), "{held}");
    let b_writes: Vec<_> = lease_requests(&audit.events(), &user_b, ns)
        .into_iter()
        .filter(|(r, code)| !r.starts_with("get ") && *code < 300)
        .collect();
    assert!(b_writes.is_empty(), "B wrote the Lease while A held it: {b_writes:?}");
    assert!(!b.log().contains("acquired lease"), "{}", b.log());
    let transitions = held["spec"]["leaseTransitions"].as_u64().unwrap_or_default();

    let signalled = Instant::now();
    assert_eq!(a.terminate().await, Some(0), "SIGTERM is a clean exit; log:\n{}", a.log());
    let released = lease(&stack, ns);
    // Released as client-go releases: no holder, or B already in its place.
    let holder = released["spec"]["holderIdentity"].as_str().unwrap_or_default().to_owned();
    assert_ne!(holder, a_id, "A still holds the Lease after its exit: {released}");
    let b_line = b.wait_line("acquired lease", Duration::from_secs(60)).await;
    let waited = signalled.elapsed();
    let b_id = identity(&b_line);
    assert_ne!(a_id, b_id);
    let taken = lease(&stack, ns);
    assert_eq!(taken["spec"]["holderIdentity"], b_id.as_str(), "{taken}");
    assert!(
        taken["spec"]["leaseTransitions"].as_u64().unwrap_or_default() > transitions,
        "a new holder is a transition: {taken}"
    );
    // Within the lease duration: the release, not the expiry, let B in.
    assert!(waited < Duration::from_secs(60), "B took over after {waited:?}: not released?");
    // A's last request was the release: an update of the Lease that succeeded.
    let a_requests = lease_requests(&audit.events(), &user_a, ns);
    let last = a_requests.last().expect("A's requests are in the audit log");
    assert_eq!((last.0.as_str(), last.1), ("update coordination.k8s.io/leases", 200));

    assert_eq!(b.terminate().await, Some(0), "log:\n{}", b.log());
    let after = lease(&stack, ns);
    assert!(
        after["spec"]["holderIdentity"].as_str().unwrap_or_default().is_empty(),
        "B released it too: {after}"
    );
}

/// With `--enable-leader-migration` the leader holds two Leases, the main one and the migration
/// one (upstream's default `cloud-provider-extraction-migration`, in the main one's namespace),
/// and SIGTERM releases both, the migration one first: the other component (here a second
/// CCM; in a cluster, kube-controller-manager rolled back) takes the migrated controllers at
/// its next retry, not after a lease duration.
#[tokio::test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
async fn the_leader_releases_the_migration_lease_and_then_the_main_one_on_sigterm() {
    let stack = KubeStack::load();
    let namespace = stack.namespace("ccm-migration");
    let ns = namespace.name.as_str();
    let audit = stack.audit();
    let flags = ["--enable-leader-migration"];
    let Candidates { mut a, mut b, a_id, user_a, _dirs, .. } =
        Candidates::start(&stack, ns, &flags, &[LEASE, MIGRATION]).await;
    let transitions =
        named_lease(&stack, ns, MIGRATION)["spec"]["leaseTransitions"].as_u64().unwrap_or_default();

    let signalled = Instant::now();
    assert_eq!(a.terminate().await, Some(0), "SIGTERM is a clean exit; log:\n{}", a.log());
    for name in [MIGRATION, LEASE] {
        let lease = named_lease(&stack, ns, name);
        assert_ne!(holder(&lease), a_id, "A still holds {name} after its exit: {lease}");
    }
    // A's last requests released the migration Lease, then the main one: each a read of that
    // Lease and its update, which succeeded.
    let a_requests = named_lease_requests(&audit.events(), &user_a, ns);
    let last: Vec<(&str, &str, u64)> =
        a_requests.iter().map(|(r, name, code)| (r.as_str(), name.as_str(), *code)).collect();
    let (get, update) = ("get coordination.k8s.io/leases", "update coordination.k8s.io/leases");
    assert_eq!(
        last[last.len().saturating_sub(4)..],
        [(get, MIGRATION, 200), (update, MIGRATION, 200), (get, LEASE, 200), (update, LEASE, 200)],
        "A's Lease requests: {last:?}"
    );

    let b_id = identity(&b.wait_line("acquired lease", Duration::from_secs(60)).await);
    assert_ne!(a_id, b_id);
    let both = [LEASE, MIGRATION];
    until("B holds both Leases", Duration::from_secs(30), || holds(&stack, ns, &both, &b_id)).await;
    let waited = signalled.elapsed();
    // Within the lease duration: the releases, not the expiry, let B in.
    assert!(waited < Duration::from_secs(60), "B took over after {waited:?}: not released?");
    let taken = named_lease(&stack, ns, MIGRATION);
    assert!(
        taken["spec"]["leaseTransitions"].as_u64().unwrap_or_default() > transitions,
        "a new holder of the migration Lease is a transition: {taken}"
    );
    eprintln!("FIGURE both Leases taken over {waited:?} after A's SIGTERM");

    assert_eq!(b.terminate().await, Some(0), "log:\n{}", b.log());
    for name in [MIGRATION, LEASE] {
        let after = named_lease(&stack, ns, name);
        assert!(holder(&after).is_empty(), "B released {name} too: {after}");
    }
}
