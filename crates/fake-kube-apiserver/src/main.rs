//! `fake-kube-apiserver`: the fake Kubernetes API server as a process, for kubectl and scripts.

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use fake_kube_apiserver::{FakeApiServer, Options};
use tokio::signal::unix::{SignalKind, signal};

/// A fake Kubernetes API server for tests: real HTTP and JSON, in memory.
///
/// Prints its base URL (http://127.0.0.1:PORT) as the first line on stdout, then serves until
/// SIGTERM or SIGINT. Everything is allowed (no authentication); nothing is persisted. It
/// serves discovery, Nodes, Namespaces, Services and Pods (with status), Secrets, ConfigMaps,
/// Endpoints, Events (v1 and events.k8s.io) and Leases: list, get, create, replace, delete,
/// merge / strategic merge / JSON patches, label and field selectors, finalizers, watches with
/// bookmarks and 410 Expired.
#[derive(Debug, Parser)]
#[command(
    name = "fake-kube-apiserver",
    version,
    after_help = "Examples:\n  url=$(fake-kube-apiserver --listen 127.0.0.1:0 | head -n 1) &\n  \
                  kubectl --server \"$url\" create --validate=false -f node.yaml\n  \
                  kubectl --server \"$url\" get nodes -o json"
)]
struct Args {
    /// Address to listen on (port 0: any free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    listen: SocketAddr,

    /// Changes kept for watches; a watch from an older resourceVersion gets 410 Expired.
    #[arg(long, value_name = "N", default_value_t = Options::default().history)]
    history: usize,

    /// Seconds between BOOKMARK events on watches that allow them.
    #[arg(long, value_name = "SECONDS", default_value_t = 1)]
    bookmark_interval: u64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    match serve(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fake-kube-apiserver: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: Args) -> std::io::Result<()> {
    // Handlers first: whoever reads the URL may signal at once, and a signal that comes before
    // its handler takes the process down with the default action (status 143, not 0).
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let options = Options {
        history: args.history,
        bookmark_interval: Duration::from_secs(args.bookmark_interval.max(1)),
    };
    let (server, run) = FakeApiServer::serve(listener, options)?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{}", server.url())?;
    stdout.flush()?;
    tokio::select! {
        result = run => result,
        _ = interrupt.recv() => Ok(()),
        _ = terminate.recv() => Ok(()),
    }
}
