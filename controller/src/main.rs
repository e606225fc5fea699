//! openstack-cloud-controller-manager: parse flags, read the environment once, run; exit 0/1 (2 for usage).

use std::process::ExitCode;

use clap::Parser;
use occm::app::{self, Env};
use occm::cloud::session::chain;
use occm::flags::{Command, Flags};

/// jemalloc, not glibc's malloc: the controller's memory comes in bursts (the first list of
/// every Node, a full resync's server and port lists) and glibc keeps a burst's freed pages in
/// its arenas for good, so the steady RSS was the peak's. jemalloc returns them within a second
/// (one arena, dirty pages purged after 1 s by its background thread: `JEMALLOC_SYS_WITH_MALLOC_CONF`
/// in .cargo/config.toml). BENCHMARKS.md, "Controller"; see: issue 16.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let flags = Flags::parse();
    let env = Env {
        os_client_config_file: std::env::var_os("OS_CLIENT_CONFIG_FILE").map(Into::into),
        home: std::env::var_os("HOME").map(Into::into),
        regional: std::env::var("OS_CCM_REGIONAL").is_ok_and(|v| v == "true"),
        identity: identity(),
        pod: std::env::var("POD_NAMESPACE").ok().zip(std::env::var("POD_NAME").ok()),
    };
    if flags.check_config {
        let search = occm::config::clouds::search_paths(env.os_client_config_file, env.home);
        let report = occm::check::run(flags.cloud_config.as_deref(), &search);
        print!("{}", report.stdout);
        eprint!("{}", report.stderr);
        return if report.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE };
    }
    init_logging(flags.v);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("openstack-cloud-controller-manager: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(command) = flags.command {
        let search = occm::config::clouds::search_paths(env.os_client_config_file, env.home);
        let (name, outcome) = match command {
            Command::MigrateLoadBalancers(args) => {
                let run = runtime.block_on(occm::migrate::run(args, search));
                ("migrate-load-balancers", run.map(|o| o as u8))
            }
            Command::Purge(args) => {
                ("purge", runtime.block_on(occm::purge::run(args, search)).map(|o| o as u8))
            }
        };
        return match outcome {
            Ok(status) => ExitCode::from(status),
            Err(error) => {
                let error = chain(error.as_ref());
                eprintln!("openstack-cloud-controller-manager {name}: {error}");
                ExitCode::FAILURE
            }
        };
    }
    match runtime.block_on(app::run(flags, env)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let error = chain(error.as_ref());
            tracing::error!(error, "exiting");
            eprintln!("openstack-cloud-controller-manager: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `-v` as klog levels: 0–1 info, 2–3 info for us and warn for libraries, 4–5 debug, ≥6 trace. `RUST_LOG` wins.
fn init_logging(v: u8) {
    let default = match v {
        0..=3 => "info,kube=warn,hyper=warn,reqwest=warn",
        4 | 5 => "debug,hyper=info,h2=info,rustls=info",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .init();
}

/// Host name plus process ID and start time, as client-go's `hostname_<uuid>`.
fn identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|h| h.trim().to_owned())
        })
        .unwrap_or_else(|| "occm".to_owned());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{host}_{:x}{:x}", std::process::id(), nanos & 0xffff_ffff)
}
