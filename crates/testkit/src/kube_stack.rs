//! The real Kubernetes of scripts/kube-up.sh, named by `CCM_KUBE_ENV`: its env file, kubectl
//! as its admin, identities minted as an installer's signer would (client certificates from
//! the CA the API server trusts, ServiceAccount tokens from the TokenRequest API), namespaces
//! that go with the test, and the API server's audit log (one JSON line per request).
//!
//! Tests that use it are `#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]`;
//! scripts/test.sh runs them with the variable set. Every test shares the one cluster: a test
//! works in namespaces of its own ([`KubeStack::namespace`]) and names cluster-wide objects
//! after them.

use std::ops::Index;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ccm_formats::kubeconfig::{ClientCertificate, Kubeconfig};
use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair};
use serde_json::Value;

use crate::cluster::run_bounded;
use crate::stack::StackEnv;

/// The variable naming the env file.
pub const VAR: &str = "CCM_KUBE_ENV";

/// The `#[ignore]` reason of every test that needs this cluster.
pub const IGNORE: &str = "needs real Kubernetes (scripts/kube-up.sh)";

/// The running cluster's settings (scripts/kube-up.sh's env file: URLs, paths, kubectl).
#[derive(Debug, Clone)]
pub struct KubeStack {
    env: StackEnv,
}

impl Index<&str> for KubeStack {
    type Output = String;

    /// One value; panics naming the key when the file lacks it.
    fn index(&self, key: &str) -> &String {
        self.env.get(key).map(|_| &self.env[key]).unwrap_or_else(|| panic!("{VAR} has no {key}"))
    }
}

impl KubeStack {
    /// Reads the file `CCM_KUBE_ENV` names; panics, saying how to start the cluster, when it is
    /// unset or unreadable.
    pub fn load() -> KubeStack {
        KubeStack { env: StackEnv::load_from(VAR, "scripts/kube-up.sh") }
    }

    /// The API server's URL (`https://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self["KUBE_API_URL"]
    }

    /// The PEM CA that signed the API server's certificate.
    pub fn server_ca(&self) -> String {
        read(Path::new(&self["KUBE_SERVER_CA_CERT"]))
    }

    /// kubectl (the server's release) as the cluster's admin (`system:masters`).
    pub fn kubectl(&self) -> Command {
        self.kubectl_as(Path::new(&self["KUBE_ADMIN_KUBECONFIG"]))
    }

    /// kubectl with another identity's kubeconfig.
    pub fn kubectl_as(&self, kubeconfig: &Path) -> Command {
        let mut cmd = Command::new(&self["KUBECTL"]);
        cmd.arg("--kubeconfig").arg(kubeconfig).env_remove("KUBECONFIG");
        cmd
    }

    /// Runs kubectl as admin with `args` (and `stdin`), within a minute; its stdout, or a panic
    /// with its stderr.
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> String {
        let mut cmd = self.kubectl();
        cmd.args(args);
        let out = run_bounded(cmd, stdin);
        assert!(
            out.status.success(),
            "kubectl {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("kubectl prints UTF-8")
    }

    /// `scripts/kube-up.sh --fresh-node [external]` on this stack: the kubelet's Node
    /// registered afresh, as a cloud node (tainted uninitialized) with `Some("external")`.
    pub fn fresh_node(&self, cloud_provider: Option<&str>) -> Command {
        let mut cmd = Command::new(&self["KUBE_UP"]);
        cmd.env("KUBE_DIR", &self["KUBE_DIR"]).arg("--fresh-node").args(cloud_provider);
        cmd
    }

    /// Installs (or updates) the CustomResourceDefinitions of OpenShift's config kinds that the
    /// generator writes and `ccm-assets operator` reads and writes (Infrastructure, Proxy,
    /// Network, ClusterOperator; [`crds_dir`]), and waits until each is Established.
    /// Idempotent and safe to call from every test: a server-side apply under one field
    /// manager, taking over fields another manager applied; never deleted (every test shares
    /// them). kubectl's discovery cache is refreshed after, so that later kubectl runs know
    /// the new kinds.
    pub fn install_crds(&self) {
        let dir = crds_dir();
        let dir = dir.to_str().expect("the repository path is UTF-8");
        let apply = ["apply", "--server-side", "--force-conflicts", "--field-manager", CRD_MANAGER];
        self.run(&[&apply[..], &["-f", dir]].concat(), None);
        self.run(&["wait", "--for=condition=Established", "--timeout=45s", "-f", dir], None);
        // Lists the API server's kinds afresh (`--cached=false`, the default) and rewrites
        // the discovery cache every kubectl of this machine reads.
        self.run(&["api-resources", "--api-group=config.openshift.io", "-o", "name"], None);
    }

    /// An object as JSON (`kubectl get -o json`), or `None` when it does not exist.
    pub fn get(&self, resource: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let mut cmd = self.kubectl();
        cmd.args(["get", resource, name, "-o", "json", "--ignore-not-found"]);
        if let Some(ns) = namespace {
            cmd.args(["-n", ns]);
        }
        let out = run_bounded(cmd, None);
        assert!(out.status.success(), "kubectl get {resource} {name}: {}", lossy(&out.stderr));
        (!out.stdout.is_empty())
            .then(|| serde_json::from_slice(&out.stdout).expect("kubectl prints JSON"))
    }

    /// Applies `objects` (JSON or YAML text) as admin with `kubectl create -f -`.
    pub fn create(&self, objects: &str) {
        self.run(&["create", "-f", "-"], Some(objects));
    }

    /// A new namespace `PREFIX-<unique>`, deleted (without waiting) when the guard drops.
    pub fn namespace(&self, prefix: &str) -> Namespace {
        let name = unique(prefix);
        self.run(&["create", "namespace", &name], None);
        Namespace { stack: self.clone(), name }
    }

    /// A kubeconfig at `dir/<user>.kubeconfig` for a client certificate signed by the CA the
    /// API server trusts (as an installer's signer would sign one): CN `user`, O `groups`.
    pub fn client_kubeconfig(&self, dir: &Path, user: &str, groups: &[&str]) -> PathBuf {
        let ca_key = KeyPair::from_pem(&pkcs8(Path::new(&self["KUBE_CLIENT_CA_KEY"])))
            .expect("the client CA key is PEM");
        let issuer =
            Issuer::from_ca_cert_pem(&read(Path::new(&self["KUBE_CLIENT_CA_CERT"])), ca_key)
                .expect("the client CA certificate is PEM");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("client parameters");
        params.distinguished_name.push(DnType::CommonName, user);
        for group in groups {
            params.distinguished_name.push(DnType::OrganizationName, *group);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate().expect("client key");
        let cert = params.signed_by(&key, &issuer).expect("client certificate");
        self.certificate_kubeconfig(dir, user, &cert.pem(), &key.serialize_pem())
    }

    /// [`KubeStack::client_kubeconfig`] with an X.509 version 1 certificate, as the Kubernetes
    /// docs make a user (`openssl x509 -req` with no extension file), which kube-apiserver
    /// accepts as it accepts v3.
    pub fn v1_client_kubeconfig(&self, dir: &Path, user: &str, groups: &[&str]) -> PathBuf {
        let ca = crate::openssl::OpensslCa::from_files(
            Path::new(&self["KUBE_CLIENT_CA_CERT"]),
            Path::new(&self["KUBE_CLIENT_CA_KEY"]),
        );
        let (cert, key) = ca.v1_client(user, groups);
        self.certificate_kubeconfig(dir, user, &cert, &key)
    }

    /// A kubeconfig at `dir/<user>.kubeconfig` for the API server as `user` with this client
    /// certificate and key (PEM).
    fn certificate_kubeconfig(&self, dir: &Path, user: &str, cert: &str, key: &str) -> PathBuf {
        let ca = self.server_ca();
        let config = Kubeconfig {
            server: self.url(),
            server_ca: Some(&ca),
            user,
            client: Some(ClientCertificate { cert, key }),
        };
        write_kubeconfig(dir, user, &config.to_yaml().expect("a kubeconfig serializes"))
    }

    /// A kubeconfig at `dir/<account>.kubeconfig` with a token for the ServiceAccount
    /// `namespace/account` from the TokenRequest API (valid for an hour).
    pub fn token_kubeconfig(&self, dir: &Path, namespace: &str, account: &str) -> PathBuf {
        let token = self.run(&["create", "token", account, "-n", namespace, "--duration=1h"], None);
        let ca = self.server_ca();
        let text = serde_saphyr::to_string(&serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "kube", "cluster": {
                "server": self.url(),
                "certificate-authority-data": base64(ca.as_bytes()),
            }}],
            "contexts": [{"name": account, "context": {"cluster": "kube", "user": account}}],
            "current-context": account,
            "users": [{"name": account, "user": {"token": token.trim()}}],
        }))
        .expect("a kubeconfig serializes");
        write_kubeconfig(dir, account, &text)
    }

    /// The API server's audit log from now on.
    pub fn audit(&self) -> AuditLog {
        let path = PathBuf::from(&self["KUBE_AUDIT_LOG"]);
        let from = std::fs::metadata(&path).map_or(0, |m| m.len());
        AuditLog { path, from }
    }
}

/// The field manager of [`KubeStack::install_crds`].
pub const CRD_MANAGER: &str = "ccm-assets-test-crds";

/// The repository's tests/crds: our CustomResourceDefinitions of OpenShift's config kinds,
/// one file each, found from this crate's place in the workspace (crates/testkit).
pub fn crds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/crds")
}

/// A namespace of one test; deleted when dropped.
#[derive(Debug)]
pub struct Namespace {
    stack: KubeStack,
    /// Its name.
    pub name: String,
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let mut cmd = self.stack.kubectl();
        cmd.args(["delete", "namespace", &self.name, "--wait=false", "--ignore-not-found"]);
        let _ = run_bounded(cmd, None);
    }
}

/// The requests the API server logged after a point (`audit.k8s.io/v1` Events, one per line).
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
    from: u64,
}

impl AuditLog {
    /// Every event logged since this log was taken (the API server writes each line whole).
    pub fn events(&self) -> Vec<Value> {
        let bytes =
            std::fs::read(&self.path).unwrap_or_else(|e| panic!("{}: {e}", self.path.display()));
        let from = usize::try_from(self.from).expect("fits").min(bytes.len());
        String::from_utf8_lossy(&bytes[from..])
            .lines()
            .filter(|l| !l.trim().is_empty())
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The events of requests made by `user` (`user.username`).
    pub fn by(&self, user: &str) -> Vec<Value> {
        self.events().into_iter().filter(|e| e["user"]["username"] == user).collect()
    }

    /// Waits up to `limit` for `done` to hold of the events so far (the log trails the
    /// responses by a few milliseconds); the events it held for, or a panic.
    pub fn wait_for(&self, limit: Duration, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let events = self.events();
            if done(&events) {
                return events;
            }
            assert!(start.elapsed() < limit, "the audit log did not show it within {limit:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// One audit event as `verb group/resource[/subresource]` (`get /nodes`, `patch /nodes/status`,
/// `update coordination.k8s.io/leases`), the form the RBAC tests compare with rules.
pub fn request(event: &Value) -> String {
    let object = &event["objectRef"];
    let mut resource = format!(
        "{}/{}",
        object["apiGroup"].as_str().unwrap_or(""),
        object["resource"].as_str().unwrap_or("")
    );
    if let Some(sub) = object["subresource"].as_str() {
        resource = format!("{resource}/{sub}");
    }
    format!("{} {resource}", event["verb"].as_str().unwrap_or(""))
}

/// A name unique to this test process and moment: `prefix-<pid36><n36><time36>`, at most 40
/// characters, a DNS label.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let t =
        SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_millis() % 1_000_000;
    let name = format!(
        "{prefix}-{}{}{}",
        radix36(u64::from(std::process::id())),
        radix36(u64::from(n)),
        radix36(u64::try_from(t).expect("fits"))
    );
    assert!(name.len() <= 40, "{name} is too long for a prefix");
    name
}

fn radix36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[usize::try_from(n % 36).expect("fits")]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII")
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn write_kubeconfig(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(format!("{name}.kubeconfig"));
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

/// A private key file as PKCS#8 PEM, which rcgen reads: scripts/kube/pki.sh writes
/// traditional (PKCS#1) RSA keys, converted with `openssl pkey`.
fn pkcs8(path: &Path) -> String {
    let text = read(path);
    if !text.starts_with("-----BEGIN RSA PRIVATE KEY-----") {
        return text;
    }
    let mut cmd = Command::new("openssl");
    cmd.arg("pkey").arg("-in").arg(path);
    let out = run_bounded(cmd, None);
    assert!(out.status.success(), "openssl pkey {}: {}", path.display(), lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("PEM is ASCII")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crds_dir_holds_one_crd_of_each_config_kind_the_operator_uses() {
        let mut names: Vec<String> = std::fs::read_dir(crds_dir())
            .expect("tests/crds")
            .map(|entry| entry.expect("an entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let expected = ["clusteroperators", "infrastructures", "networks", "proxies"]
            .map(|plural| format!("{plural}.config.openshift.io.yaml"));
        assert_eq!(names, expected);
        for name in &names {
            let text = read(&crds_dir().join(name));
            let crd: Value = serde_saphyr::from_str(&text).expect("one YAML object");
            assert_eq!(crd["kind"], "CustomResourceDefinition", "{name}");
            assert_eq!(
                format!("{}.yaml", crd["metadata"]["name"].as_str().expect("a name")),
                *name
            );
            assert_eq!(crd["spec"]["scope"], "Cluster", "{name}");
            let version = &crd["spec"]["versions"][0];
            assert_eq!(
                (version["name"].as_str(), version["served"].as_bool()),
                (Some("v1"), Some(true))
            );
            assert_eq!(version["storage"], true, "{name}");
        }
    }

    #[test]
    fn unique_names_are_dns_labels_and_differ() {
        let (a, b) = (unique("ns"), unique("ns"));
        assert_ne!(a, b);
        assert!(a.starts_with("ns-"));
        assert!(a.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'), "{a}");
    }

    #[test]
    fn an_audit_event_reads_as_verb_and_resource() {
        let event = serde_json::json!({"verb": "patch", "objectRef":
            {"resource": "nodes", "subresource": "status", "apiVersion": "v1"}});
        assert_eq!(request(&event), "patch /nodes/status");
        let event = serde_json::json!({"verb": "update", "objectRef":
            {"resource": "leases", "apiGroup": "coordination.k8s.io"}});
        assert_eq!(request(&event), "update coordination.k8s.io/leases");
    }
}
