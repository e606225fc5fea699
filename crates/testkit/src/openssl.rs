//! Certificates minted with the openssl CLI as users mint them, and `openssl s_server` as a TLS
//! server that requires a client certificate and checks it as Go and OpenSSL do.
//!
//! `openssl x509 -req` without `-extfile` writes an X.509 version 1 certificate, which is how
//! the Kubernetes docs make a user; kube-apiserver takes it, rustls's webpki does not (v3
//! only). So a rustls server cannot stand in for kube-apiserver when the client certificate is
//! v1: [`ClientAuthServer`] is OpenSSL's.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use tempfile::TempDir;

use crate::cluster::run_bounded;

/// A CA whose certificate and key are files openssl signs with.
pub struct OpensslCa {
    cert: PathBuf,
    key: PathBuf,
    /// The CA's own files when [`OpensslCa::new`] made them.
    _dir: Option<TempDir>,
}

impl OpensslCa {
    /// A new self-signed CA named `name` (P-256, `openssl req -x509`).
    pub fn new(name: &str) -> OpensslCa {
        let dir = tempfile::tempdir().expect("a temp dir");
        let subject = format!("/CN={name}");
        openssl(
            dir.path(),
            &["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
            &["-days", "2", "-subj", &subject, "-keyout", "ca.key", "-out", "ca.crt"],
        );
        let (cert, key) = (dir.path().join("ca.crt"), dir.path().join("ca.key"));
        OpensslCa { cert, key, _dir: Some(dir) }
    }

    /// The CA in these PEM files (a real cluster's client CA), used as they are: nothing is
    /// written beside them.
    pub fn from_files(cert: &Path, key: &Path) -> OpensslCa {
        OpensslCa { cert: cert.to_owned(), key: key.to_owned(), _dir: None }
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> String {
        read(&self.cert)
    }

    /// A client certificate for `CN=user` with an `O=` for each of `groups`, and its key
    /// (RSA 2048), both PEM, made as the Kubernetes docs make a user: a CSR signed with
    /// `openssl x509 -req` and no extension file, so X.509 version 1 (asserted).
    pub fn v1_client(&self, user: &str, groups: &[&str]) -> (String, String) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let subject: String = std::iter::once(format!("/CN={user}"))
            .chain(groups.iter().map(|group| format!("/O={group}")))
            .collect();
        let new = ["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "u.key"];
        openssl(dir.path(), &new, &["-subj", &subject, "-out", "u.csr"]);
        // The serial file goes to the temp dir, not beside a CA that is not ours.
        let (ca, ca_key) = (self.cert.display().to_string(), self.key.display().to_string());
        let sign = ["x509", "-req", "-in", "u.csr", "-CA", &ca, "-CAkey", &ca_key];
        let serial = ["-CAserial", "ca.srl", "-CAcreateserial", "-days", "1", "-out", "u.crt"];
        openssl(dir.path(), &sign, &serial);
        let text = openssl(dir.path(), &["x509", "-in", "u.crt", "-noout", "-text"], &[]);
        assert!(text.contains("Version: 1 (0x0)"), "this openssl minted no v1 certificate: {text}");
        (read(&dir.path().join("u.crt")), read(&dir.path().join("u.key")))
    }
}

/// `openssl s_server` on 127.0.0.1: its certificate from the caller, a client certificate
/// required and verified against a CA (`-Verify 1 -verify_return_error`: without one, or with
/// another CA's, the handshake fails), every GET answered with the file its path names
/// (`-WWW`: `HTTP/1.0 200 ok`, `text/plain`). One connection at a time: a client that keeps
/// its connection holds off the next one. Killed when dropped.
pub struct ClientAuthServer {
    /// Its port.
    pub port: u16,
    child: Child,
    dir: TempDir,
}

impl Drop for ClientAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ClientAuthServer {
    /// Starts it with this certificate and key (PEM), requiring client certificates signed by
    /// `client_ca` (PEM), serving `files` (path without the leading `/`, content).
    pub fn start(cert: &str, key: &str, client_ca: &str, files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        for (name, text) in
            [("server.crt", cert), ("server.key", key), ("client-ca.crt", client_ca)]
                .into_iter()
                .chain(files.iter().copied())
        {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().expect("a file in the dir")).expect("a dir");
            std::fs::write(&path, text).expect("write a file");
        }
        let log = std::fs::File::create(dir.path().join("s_server.log")).expect("a log file");
        let mut child = Command::new("openssl")
            .args(["s_server", "-accept", "127.0.0.1:0", "-cert", "server.crt"])
            .args(["-key", "server.key", "-CAfile", "client-ca.crt", "-Verify", "1"])
            .args(["-verify_return_error", "-WWW"])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("openssl is needed by this test (scripts/test-tools.sh installs it)");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        // Reads on to the end, so that s_server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(port) = line.strip_prefix("ACCEPT 127.0.0.1:") {
                    let _ = tx.send(port.trim().parse::<u16>().expect("a port"));
                }
            }
        });
        let Ok(port) = rx.recv_timeout(Duration::from_secs(10)) else {
            let _ = child.kill();
            panic!(
                "openssl s_server did not listen within 10 s: {}",
                read(&dir.path().join("s_server.log"))
            );
        };
        ClientAuthServer { port, child, dir }
    }

    /// What s_server wrote to stderr so far: each client certificate it verified
    /// (`depth=0 CN = …`), each file served (`FILE:…`), each handshake it refused.
    pub fn log(&self) -> String {
        read(&self.dir.path().join("s_server.log"))
    }
}

/// Runs openssl with `args` then `more` in `dir` (bounded); its stdout, or a panic with its
/// stderr.
fn openssl(dir: &Path, args: &[&str], more: &[&str]) -> String {
    let mut cmd = Command::new("openssl");
    cmd.current_dir(dir).args(args).args(more);
    let out = run_bounded(cmd, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "openssl {} {}: {stderr}", args.join(" "), more.join(" "));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
