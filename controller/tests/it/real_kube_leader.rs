//! Leader election on a real Lease of the real API server (scripts/kube-up.sh): two CCM
//! binaries, each with a client certificate of its own (so the audit log tells their requests
//! apart), on a Lease in a namespace of the test's. Keystone is unreachable and only the node
//! controller is enabled: the processes touch nothing of the shared cluster but their Lease.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::kube_stack::{KubeStack, request, unique};

use crate::support::{Process, free_port, start_with_kubeconfig};

const LEASE: &str = "cloud-controller-manager";

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
    stack.get("lease", Some(namespace), LEASE).expect("the Lease exists")
}

/// The identity an "acquired lease" line names.
fn identity(line: &str) -> String {
    let start = line.find("identity=").expect("the line names the identity") + "identity=".len();
    line[start..].split_whitespace().next().unwrap().trim_matches('"').to_owned()
}

fn lease_requests(events: &[Value], user: &str, namespace: &str) -> Vec<(String, u64)> {
    events
        .iter()
        .filter(|e| e["user"]["username"] == user && e["objectRef"]["namespace"] == namespace)
        .filter(|e| e["objectRef"]["resource"] == "leases")
        .map(|e| (request(e), e["responseStatus"]["code"].as_u64().unwrap_or_default()))
        .collect()
}

#[tokio::test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
async fn the_leader_releases_its_lease_on_sigterm_and_the_other_takes_over() {
    let stack = KubeStack::load();
    let namespace = stack.namespace("ccm-leader");
    let ns = namespace.name.as_str();
    let dir = tempfile::tempdir().unwrap();
    let (user_a, user_b) = (unique("ccm-a"), unique("ccm-b"));
    let audit = stack.audit();
    // A long lease: a takeover that waited for it to expire would take a minute; a released one
    // is taken at the next retry.
    let flags = [
        "--controllers=cloud-node",
        "--leader-elect-lease-duration=60s",
        "--leader-elect-renew-deadline=40s",
        "--leader-elect-retry-period=1s",
    ];
    let config_a = stack.client_kubeconfig(dir.path(), &user_a, &["system:masters"]);
    let config_b = stack.client_kubeconfig(dir.path(), &user_b, &["system:masters"]);
    let dir_a = tempfile::tempdir().unwrap();
    let mut a = start_real(dir_a.path(), &config_a, ns, &flags);
    let a_id = identity(&a.wait_line("acquired lease", Duration::from_secs(60)).await);
    assert_eq!(lease(&stack, ns)["spec"]["holderIdentity"], a_id.as_str());

    let dir_b = tempfile::tempdir().unwrap();
    let mut b = start_real(dir_b.path(), &config_b, ns, &flags);
    // B reads the Lease again and again, and never takes it while A renews.
    audit.wait_for(Duration::from_secs(60), |events| {
        let reads = lease_requests(events, &user_b, ns);
        reads.iter().filter(|(r, _)| r == "get coordination.k8s.io/leases").count() >= 3
    });
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
