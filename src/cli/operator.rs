//! `ccm-assets operator`: its flags and help text.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Arguments of `operator`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct OperatorArgs {
    /// Run something else than the operator itself.
    #[command(subcommand)]
    pub action: Option<OperatorAction>,

    /// How to reach the API server.
    #[command(flatten)]
    pub access: Access,

    /// Serve /healthz, /readyz and /metrics (plain HTTP) here.
    ///
    /// /readyz answers 503 naming each controller whose last pass failed, with its error.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9259")]
    pub health_addr: SocketAddr,

    /// Read the images the CCM runs from this file instead of the table built in.
    ///
    /// The same JSON as data/images.json (what OpenShift mounts as images.json); read at start.
    #[arg(long, value_name = "FILE")]
    pub images: Option<PathBuf>,

    /// How long the Lease holds without a renewal before another candidate takes it.
    ///
    /// With the renew deadline, how long the API server may fail before the operator gives up
    /// its Lease and exits: CCCMO's values (137s, 107s, 26s), so that an API server outage
    /// of a minute or two, as during an upgrade, does not restart it. A graceful stop
    /// releases the Lease, and the next candidate takes it within one retry period.
    #[arg(long, value_name = "DURATION", default_value = "137s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: std::time::Duration,

    /// How long the holder tries to renew before it gives the Lease up and exits.
    #[arg(long, value_name = "DURATION", default_value = "107s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: std::time::Duration,

    /// How often candidates try to take the Lease, and the holder renews it.
    #[arg(long, value_name = "DURATION", default_value = "26s", value_parser = parse_duration)]
    pub leader_elect_retry_period: std::time::Duration,

    /// Merge this system CA bundle into ccm-trusted-ca.
    ///
    /// A missing file is skipped: the bundle is then the proxy's CA and the cloud config's.
    #[arg(long, value_name = "FILE", default_value = crate::operator::trusted_ca::SYSTEM_BUNDLE)]
    pub system_ca_bundle: PathBuf,
}

/// The API server.
#[derive(Debug, clap::Args)]
pub struct Access {
    /// Use this kubeconfig (its current context) instead of the in-cluster service account.
    #[arg(long, value_name = "FILE", env = "KUBECONFIG", global = true)]
    pub kubeconfig: Option<PathBuf>,
}

/// What `operator` runs besides the operator.
#[derive(Debug, clap::Subcommand)]
pub enum OperatorAction {
    /// Hand the cluster back: delete everything the operator applies, and nothing else.
    ///
    /// Renders what the operator would apply from the live cluster, deletes each object (the
    /// CCM's Deployment first, its namespace last), waits for the CCM's pods and for every
    /// object to be gone, and prints each one. Exits 0 only when all are gone; 1 otherwise,
    /// naming what is left. Stop the operator's Deployment first, or switch it off, or it puts
    /// everything back.
    #[command(after_help = "Example:\n  ccm-assets operator remove --kubeconfig ./auth/kubeconfig")]
    Remove {
        /// Give up after this long (e.g. 90s, 5m).
        #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
        timeout: std::time::Duration,
    },
}

/// `90s`, `5m`, `1h`.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 =
        number.parse().map_err(|_| format!("{text:?}: expected e.g. 90s, 5m or 1h"))?;
    let seconds = match unit {
        "s" => number,
        "m" => number * 60,
        "h" => number * 3600,
        _ => return Err(format!("{text:?}: the unit must be s, m or h")),
    };
    Ok(std::time::Duration::from_secs(seconds))
}
