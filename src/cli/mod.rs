//! Command-line definitions and help text (the manual), and dispatch to the commands.

mod commands;
mod log;
pub(crate) mod operator;
mod report;
pub(crate) mod resolve;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory as _, Parser, Subcommand, ValueEnum};

use crate::assets::options::ConfigFormat;

/// Exit code for invalid input (install-config.yaml, clouds.yaml), as distinct from other errors.
pub const EXIT_INVALID_INPUT: u8 = 3;

/// Generate cloud-provider configs and external CCM manifests.
///
/// ccm-assets reads an OpenShift-style install-config.yaml (and, on OpenStack, clouds.yaml)
/// from an asset directory and writes, through an asset graph, everything a cluster needs to run
/// an external cloud-controller-manager from its first boot. Re-running keeps unchanged files
/// untouched and keeps your edits to generated files unless their inputs changed.
///
/// Exit codes: 0 success, 1 error, 2 usage error, 3 invalid input.
#[derive(Debug, Parser)]
#[command(name = "ccm-assets", version, propagate_version = true, max_term_width = 100)]
#[command(after_help = "Examples:\n  \
    ccm-assets create manifests --dir ./cluster\n  \
    ccm-assets validate --dir ./cluster")]
pub struct Cli {
    /// Lowest level of log lines printed on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogLevel::Info, value_name = "LEVEL")]
    pub log_level: LogLevel,

    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Generate assets into an asset directory.
    #[command(subcommand)]
    Create(CreateTarget),

    /// Check install-config.yaml without writing anything.
    ///
    /// Parses DIR/install-config.yaml, applies the installer's defaults and reports every
    /// problem at once, one `field.path: Type: detail` line each. Unknown fields are warnings.
    /// Exits 0 when the file is valid and 3 when it is not.
    #[command(after_help = "Examples:\n  ccm-assets validate --dir ./cluster\n  \
        ccm-assets validate --dir ./cluster --log-level warn")]
    Validate {
        /// Asset directory holding install-config.yaml.
        #[arg(long, value_name = "DIR", default_value = ".")]
        dir: PathBuf,
    },

    /// Render the bootstrap CCM on the bootstrap node.
    ///
    /// Reads DIR/manifests/cloud-provider-config.yaml (with any edits made after `create
    /// manifests`) and DIR/bootstrap/, and writes OUT/manifests/ (the static pod), OUT/configs/
    /// (cloud.conf and its CA) and OUT/secrets/ (the kubeconfig; on Azure also cloud.conf, with
    /// the client of DIR/openshift/99_cloud-creds-secret.yaml merged in). Without a cloud-provider
    /// config it writes nothing and succeeds. The bootkube stage runs this in a container.
    #[command(
        after_help = "Examples:\n  ccm-assets render --asset-dir /assets --dest-dir /assets/ccm-bootstrap\n  \
        ccm-assets render --asset-dir ./cluster --dest-dir /tmp/ccm-bootstrap"
    )]
    Render {
        /// Asset directory `create manifests` wrote.
        #[arg(long, value_name = "DIR", default_value = ".")]
        asset_dir: PathBuf,
        /// Where to write manifests/, configs/ and secrets/.
        #[arg(long, value_name = "OUT")]
        dest_dir: PathBuf,
    },

    /// Merge the Azure service principal into an Azure cloud config.
    ///
    /// The upstream Azure CCM reads its client ID and secret only from its cloud config, which
    /// the cluster keeps in a ConfigMap without them. The generated Deployment runs this in an
    /// init container: it reads CONFIG and DIR/azure_client_id and DIR/azure_client_secret (the
    /// mounted azure-cloud-credentials Secret) and writes to OUT a copy of CONFIG with
    /// aadClientId and aadClientSecret set: mode 0600, or 0644 when the secret file itself is
    /// readable by all (as in a Secret volume). Nothing is written on error; no value is logged.
    #[command(after_help = "Example:\n  ccm-assets inject-azure-credentials \\\n    \
        --cloud-config /etc/kubernetes-cloud-config/cloud.conf \\\n    \
        --credentials-dir /etc/azure/credentials \\\n    \
        --output /etc/kubernetes-cloud-config-merged/cloud.conf")]
    InjectAzureCredentials {
        /// The Azure cloud config (JSON).
        #[arg(long, value_name = "CONFIG")]
        cloud_config: PathBuf,
        /// Directory holding the files azure_client_id and azure_client_secret.
        #[arg(long, value_name = "DIR")]
        credentials_dir: PathBuf,
        /// Where to write the merged config.
        #[arg(long, value_name = "OUT")]
        output: PathBuf,
    },

    /// Keep the CCM's configuration, CA bundle and objects right on a running cluster.
    ///
    /// A long-running mode (day 2), run by the Deployment `create manifests` writes under
    /// manifests/ccm-operator/. It holds the Lease
    /// openshift-cloud-controller-manager-operator/ccm-assets-operator (released on SIGTERM)
    /// and runs three controllers over watches of single objects: the cloud config sync
    /// (Infrastructure/cluster and openshift-config/<spec.cloudConfig.name> → the transformed
    /// openshift-cloud-controller-manager/cloud-conf), the trusted CA bundle (the Proxy's
    /// trustedCA, the cloud config's ca-bundle.pem and the system bundle → ccm-trusted-ca,
    /// each certificate checked) and the CCM itself (namespace, RBAC, credentials Secret copied
    /// from kube-system, Deployment), rendered by the same platform modules as `create
    /// manifests` and applied server-side under the field manager ccm-assets-operator, only
    /// where the live object differs. It reports on ClusterOperator/cloud-controller-manager:
    /// a bad edit makes it Degraded at once with the exact error; API errors only after two
    /// minutes of failing.
    #[command(after_help = "Examples:\n  ccm-assets operator\n  \
        ccm-assets operator --kubeconfig ./auth/kubeconfig --health-addr 127.0.0.1:9259\n  \
        ccm-assets operator remove --kubeconfig ./auth/kubeconfig")]
    Operator(operator::OperatorArgs),

    /// Print the asset graph.
    ///
    /// Lists every asset with its dependencies, in registration order. `--format dot` prints
    /// Graphviz input with an edge from each dependency to its dependent.
    #[command(after_help = "Examples:\n  ccm-assets graph\n  \
        ccm-assets graph --format dot | dot -Tsvg > graph.svg")]
    Graph {
        /// Output format.
        #[arg(long, value_enum, default_value_t = GraphFormat::Text, value_name = "FORMAT")]
        format: GraphFormat,
    },

    /// Print a shell completion script.
    ///
    /// Load it in the current shell, or install it where your shell looks for completions.
    #[command(after_help = "Examples:\n  source <(ccm-assets completion bash)\n  \
        ccm-assets completion zsh > \"${fpath[1]}/_ccm-assets\"")]
    Completion {
        /// The shell to generate for.
        #[arg(value_enum, value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
}

/// What `create` generates.
#[derive(Debug, Subcommand)]
pub enum CreateTarget {
    /// Generate the manifests from install-config.yaml.
    ///
    /// Reads DIR/install-config.yaml (and, for OpenStack, the clouds.yaml found through
    /// $OS_CLIENT_CONFIG_FILE, ./clouds.yaml, ~/.config/openstack/clouds.yaml or
    /// /etc/openstack/clouds.yaml) and writes the generated files under DIR. Inputs are never
    /// modified. The state of the run is kept in DIR/.ccm-assets-state.json; on any error
    /// nothing in DIR changes.
    #[command(after_help = "Examples:\n  ccm-assets create manifests --dir ./cluster\n  \
        ccm-assets create manifests --dir ./cluster --offline --infra-id mycluster-x7k2p")]
    Manifests(CreateArgs),
}

/// Arguments of `create manifests`.
#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// Asset directory holding install-config.yaml.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,

    /// Make no call to any cloud API.
    ///
    /// Values that would be looked up (an external network's ID, whether the cloud has a
    /// load-balancer service) must then be given as IDs in install-config.yaml, and the IBM
    /// Cloud account with --ibm-account-id.
    #[arg(long)]
    pub offline: bool,

    /// Use this infrastructure ID instead of a generated one.
    ///
    /// The infrastructure ID names cloud resources. By default it is the cluster name (cut to
    /// 21 characters) plus a dash and five random characters, generated once and kept in the
    /// state file. Pin it for reproducible output: lowercase letters, digits and '-', at most
    /// 27 characters, starting and ending with a letter or digit.
    #[arg(long, value_name = "ID", value_parser = resolve::parse_infra_id)]
    pub infra_id: Option<String>,

    /// Run this cloud-controller-manager image.
    ///
    /// The image of the in-cluster Deployment and the bootstrap static pod, whatever the
    /// platform. The default is the platform's image in the table this ccm-assets was built
    /// with (data/images.json): our own CCM on OpenStack, the upstream CCMs elsewhere.
    #[arg(long, value_name = "IMAGE")]
    pub ccm_image: Option<String>,

    /// Render on the bootstrap node with this ccm-assets image.
    ///
    /// The image the bootkube stage runs `ccm-assets render` from. The default is the
    /// release this ccm-assets was built with (data/images.json).
    #[arg(long, value_name = "IMAGE")]
    pub ccm_assets_image: Option<String>,

    /// Name this IBM Cloud account in the cloud config (IBM Cloud, PowerVS).
    ///
    /// Without it the account of IC_API_KEY is asked of IAM (the IAM service endpoint of the
    /// install-config, else iam.cloud.ibm.com). Required with --offline.
    #[arg(long, value_name = "ID")]
    pub ibm_account_id: Option<String>,

    /// Write the vSphere cloud config as yaml or as the legacy ini.
    ///
    /// The YAML form is what current vSphere CCMs read; the INI form ([Global],
    /// [VirtualCenter "server"], [Workspace], [Labels]) is for older ones.
    // The brackets are INI section names in --help, not links.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t)]
    pub vsphere_config_format: ConfigFormat,

    /// Prepare a move from the in-tree provider (leader migration).
    ///
    /// For a running cluster whose kube-controller-manager still runs the in-tree cloud
    /// provider: the in-cluster CCM takes its leases in kube-system and runs with
    /// --enable-leader-migration, so that it and kube-controller-manager never run the route,
    /// service and cloud-node-lifecycle controllers at the same time while the control plane is
    /// upgraded (KEP-2436). Also written: the CCM's LeaderMigrationConfiguration (a ConfigMap
    /// under manifests/ccm/), RBAC on the cloud-provider-extraction-migration lease for both
    /// managers, and, outside manifests/, DIR/leader-migration/kube-controller-manager.yaml:
    /// place it on every control-plane node and start kube-controller-manager with
    /// --enable-leader-migration --leader-migration-config=FILE. The bootstrap CCM is unchanged.
    ///
    /// Off by default: a new cluster starts with the external CCM and needs none of it.
    /// OpenStack only: on any other platform it is an error, because that platform's CCM is
    /// not known to take the migration lease and both managers could run the same controllers.
    #[arg(long)]
    pub leader_migration: bool,
}

/// Log levels, as the installer names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    /// Everything, including each asset as it is generated.
    Debug,
    /// One line per file written (the default).
    Info,
    /// Only what you may not expect: discarded edits, unknown fields.
    Warn,
    /// Only errors.
    Error,
}

/// Output formats of `graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    /// One line per asset.
    Text,
    /// Graphviz DOT.
    Dot,
}

/// Parses the command line, runs the command, prints any error once and returns the exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    log::init(cli.log_level);
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => report::report(&err),
    }
}

/// The clap command, for completions and help snapshots.
pub fn command() -> clap::Command {
    Cli::command()
}
