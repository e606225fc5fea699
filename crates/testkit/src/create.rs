//! `create manifests`: the command line the tests run, spelled once.

/// The infrastructure ID the tests pin, so that golden files are stable.
pub const INFRA_ID: &str = "demo-x7k2p";

/// One `ccm-assets create manifests` command line.
#[derive(Debug, Clone)]
pub struct CreateManifests {
    offline: bool,
    infra_id: Option<String>,
    extra: Vec<String>,
}

impl CreateManifests {
    /// `--offline --infra-id demo-x7k2p`: no cloud call, stable output.
    pub fn offline() -> CreateManifests {
        CreateManifests { offline: true, infra_id: Some(INFRA_ID.to_owned()), extra: Vec::new() }
    }

    /// `--infra-id demo-x7k2p` without `--offline`: the generator asks the cloud.
    pub fn online() -> CreateManifests {
        CreateManifests { offline: false, ..CreateManifests::offline() }
    }

    /// No `--infra-id`: the generator draws one (and keeps it in its state).
    pub fn random_infra_id(self) -> CreateManifests {
        CreateManifests { infra_id: None, ..self }
    }

    /// Adds flags after the standard ones.
    pub fn flags(mut self, flags: &[&str]) -> CreateManifests {
        self.extra.extend(flags.iter().map(|f| (*f).to_owned()));
        self
    }

    /// The arguments after the binary's name, with `dir` as `--dir`.
    pub fn args(&self, dir: &str) -> Vec<String> {
        let mut args = vec!["create".to_owned(), "manifests".to_owned(), "--dir".to_owned()];
        args.push(dir.to_owned());
        if self.offline {
            args.push("--offline".to_owned());
        }
        if let Some(id) = &self.infra_id {
            args.extend(["--infra-id".to_owned(), id.clone()]);
        }
        args.extend(self.extra.iter().cloned());
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_run_is_offline_with_the_pinned_id_and_extra_flags_come_last() {
        let args = CreateManifests::offline().flags(&["--ccm-image", "x"]).args("D");
        let want = "create manifests --dir D --offline --infra-id demo-x7k2p --ccm-image x";
        assert_eq!(args.join(" "), want);
        assert_eq!(
            CreateManifests::online().random_infra_id().args("D").join(" "),
            "create manifests --dir D"
        );
    }
}
