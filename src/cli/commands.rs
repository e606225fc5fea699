//! The commands: each resolves its inputs, calls the library and reports in the installer's style.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use anyhow::Context as _;

use super::resolve;
use super::{Cli, Command, CreateArgs, CreateTarget, GraphFormat};
use crate::assets::{self, Inputs};
use crate::create::{self, Env, Request};
use crate::graph::write::Plan;
use crate::graph::{File, dot};
use crate::installconfig::{self, clouds};

pub(super) fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Create(CreateTarget::Manifests(args)) => create_manifests(args),
        Command::Validate { dir } => validate(&dir),
        Command::Render { asset_dir, dest_dir } => render(&asset_dir, &dest_dir),
        Command::InjectAzureCredentials { cloud_config, credentials_dir, output } => {
            inject_azure_credentials(&cloud_config, &credentials_dir, &output)
        }
        Command::Operator(args) => operator(args),
        Command::Graph { format } => graph(format),
        Command::Completion { shell } => completion(shell),
    }
}

/// True when the error is the user's input being wrong (exit code 3), not a failure to act.
pub(super) fn is_invalid_input(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<installconfig::Error>().is_some_and(installconfig::Error::is_invalid_input)
            || e.downcast_ref::<clouds::Error>().is_some_and(clouds::Error::is_invalid_input)
            || e.is::<create::CaError>()
    })
}

fn env() -> anyhow::Result<Env> {
    resolve::env_from_process().context("could not read the working directory")
}

fn create_manifests(args: CreateArgs) -> anyhow::Result<()> {
    let CreateArgs {
        dir,
        offline,
        infra_id,
        ccm_image,
        ccm_assets_image,
        ibm_account_id,
        vsphere_config_format,
        leader_migration,
    } = args;
    let request = Request {
        offline,
        infra_id,
        ccm_image,
        ccm_assets_image,
        ibm_account_id,
        vsphere_config_format,
        leader_migration,
        ..Request::new(dir, env()?)
    };
    let outcome = create::create_manifests(&request)?;
    if outcome.unchanged() {
        tracing::info!("Manifests in {} are up to date", request.dir.display());
    } else {
        tracing::info!("Manifests created in {}", request.dir.display());
    }
    Ok(())
}

fn validate(dir: &Path) -> anyhow::Result<()> {
    create::load_install_config(dir, &env()?)?;
    tracing::info!("{} is valid", create::INSTALL_CONFIG);
    Ok(())
}

fn render(asset_dir: &Path, dest_dir: &Path) -> anyhow::Result<()> {
    match crate::render::render(asset_dir, dest_dir)? {
        crate::render::Rendered::Nothing => tracing::info!(
            "No cloud-provider config in {}: nothing to render",
            asset_dir.join("manifests").display()
        ),
        crate::render::Rendered::Files(files) => {
            for file in files {
                tracing::info!("Wrote {}", dest_dir.join(file).display());
            }
        }
    }
    Ok(())
}

fn inject_azure_credentials(config: &Path, dir: &Path, output: &Path) -> anyhow::Result<()> {
    use crate::assets::azure::inject;
    let read = |path: &Path| {
        std::fs::read_to_string(path).with_context(|| format!("could not read {}", path.display()))
    };
    let text = read(config)?;
    let mut credentials = std::collections::BTreeMap::new();
    for key in [inject::CLIENT_ID_KEY, inject::CLIENT_SECRET_KEY] {
        credentials.insert(key.to_owned(), read(&dir.join(key))?);
    }
    let merged = inject::inject(&text, &credentials)
        .with_context(|| format!("could not merge {} into {}", dir.display(), config.display()))?;
    let name = output.file_name().context("--output must name a file")?;
    let parent = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // As readable as the secret it now holds: 0600 unless the secret file is readable by
    // others (a Secret volume's default 0644, inside the pod's own memory volume).
    let secret_path = dir.join(inject::CLIENT_SECRET_KEY);
    let shared = std::fs::metadata(&secret_path)
        .with_context(|| format!("could not read {}", secret_path.display()))?
        .permissions()
        .mode()
        & 0o044
        != 0;
    let name = name.to_string_lossy().into_owned();
    let file = if shared { File::new(name, merged) } else { File::secret(name, merged) };
    let plan = Plan { writes: vec![file], removes: Vec::new() };
    crate::graph::write::commit(parent, &plan)?;
    tracing::info!(
        "Wrote {} (the Azure client ID and secret of {} merged in)",
        output.display(),
        dir.display()
    );
    Ok(())
}

fn graph(format: GraphFormat) -> anyhow::Result<()> {
    let graph = assets::graph(Inputs::default())?;
    let text = match format {
        GraphFormat::Text => dot::text(&graph),
        GraphFormat::Dot => dot::dot(&graph),
    };
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(())
}

fn completion(shell: clap_complete::Shell) -> anyhow::Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut super::command(), "ccm-assets", &mut out);
    std::io::stdout().write_all(&out)?;
    Ok(())
}

fn operator(args: super::operator::OperatorArgs) -> anyhow::Result<()> {
    use super::operator::OperatorAction;
    let super::operator::OperatorArgs {
        action,
        access,
        health_addr,
        images,
        system_ca_bundle,
        leader_elect_lease_duration,
        leader_elect_renew_deadline,
        leader_elect_retry_period,
    } = args;
    let images = match images {
        Some(path) => {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read --images {}", path.display()))?;
            serde_json::from_str(&text)
                .with_context(|| format!("--images {}: not an images table", path.display()))?
        }
        None => assets::images::Images::default(),
    };
    match action {
        Some(OperatorAction::Remove { timeout }) => {
            crate::operator::remove::run(access.kubeconfig.as_deref(), &images, timeout)
        }
        None => crate::operator::run::run(crate::operator::run::Options {
            kubeconfig: access.kubeconfig,
            health_addr,
            images,
            system_bundle: system_ca_bundle,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            lease: crate::operator::run::LeaseTiming {
                duration: leader_elect_lease_duration,
                renew_deadline: leader_elect_renew_deadline,
                retry_period: leader_elect_retry_period,
            },
        }),
    }
}
