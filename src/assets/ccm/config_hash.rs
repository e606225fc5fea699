//! The pod template's `ccm-assets.io/config-hash`: a digest of what the CCM reads only at
//! start, so that a change of it, and only of it, rolls the Deployment.
//!
//! An upstream CCM reads its cloud config, credentials and CA bundle once: the hash covers
//! them, and an edit reaches the CCM by the roll. A CCM that takes them live
//! ([`CcmSpec::reloads_config`], ours) keeps them out: an edit then never restarts it, and a
//! restart is never spent on one (issue 38). What every CCM reads at start alone stays in: the
//! `LeaderMigrationConfiguration` (`--leader-migration-config`), and, for a CCM whose
//! credentials an init container merges into its config ([`CcmSpec::inject_credentials`]),
//! the config and credentials that merge is made of.

use crate::assets::provider::CcmSpec;

/// What the Deployment hands its CCM, as the hash reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Inputs<'a> {
    /// The in-cluster cloud config.
    pub(crate) cloud_conf: &'a str,
    /// The in-cluster credentials Secret's values, joined (empty without one).
    pub(crate) credentials: &'a str,
    /// The CA bundle (empty without one).
    pub(crate) ca_bundle: &'a str,
    /// The CCM's `LeaderMigrationConfiguration`, with `--leader-migration`.
    pub(crate) leader_migration: Option<&'a str>,
}

/// The hash of what `spec`'s CCM reads only at start (hex SHA-256; of nothing, when it reads
/// nothing at start alone).
pub(crate) fn hash(spec: &CcmSpec, inputs: &Inputs<'_>) -> String {
    let Inputs { cloud_conf, credentials, ca_bundle, leader_migration } = *inputs;
    let live = spec.reloads_config && !spec.inject_credentials;
    let mut hashed = Vec::new();
    if !live {
        hashed.extend([cloud_conf, credentials, ca_bundle]);
    }
    hashed.extend(leader_migration);
    crate::graph::state::sha256(hashed.join("\0").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    const INPUTS: Inputs<'static> = Inputs {
        cloud_conf: "[Global]\n",
        credentials: "clouds: {}\n",
        ca_bundle: "-----BEGIN CERTIFICATE-----\n",
        leader_migration: None,
    };

    fn upstream() -> CcmSpec {
        CcmSpec::upstream("x-cloud-controller-manager", "/bin/x", "x")
    }

    fn live() -> CcmSpec {
        CcmSpec { reloads_config: true, ..upstream() }
    }

    /// Each of the config, the credentials and the CA changed in turn.
    fn edits() -> [Inputs<'static>; 3] {
        [
            Inputs { cloud_conf: "[Global]\nregion = r\n", ..INPUTS },
            Inputs { credentials: "clouds: {a: {}}\n", ..INPUTS },
            Inputs { ca_bundle: "", ..INPUTS },
        ]
    }

    #[test]
    fn an_edit_of_config_credentials_or_ca_rolls_a_ccm_that_reads_them_at_start() {
        for edited in edits() {
            assert_ne!(hash(&upstream(), &edited), hash(&upstream(), &INPUTS), "{edited:?}");
        }
    }

    #[test]
    fn an_edit_of_config_credentials_or_ca_never_rolls_a_ccm_that_reloads_them() {
        for edited in edits() {
            assert_eq!(hash(&live(), &edited), hash(&live(), &INPUTS), "{edited:?}");
        }
    }

    #[test]
    fn the_leader_migration_config_rolls_every_ccm_since_it_is_read_at_start() {
        let migration =
            Inputs { leader_migration: Some("kind: LeaderMigrationConfiguration\n"), ..INPUTS };
        let other =
            Inputs { leader_migration: Some("kind: LeaderMigrationConfiguration\n#\n"), ..INPUTS };
        for spec in [upstream(), live()] {
            assert_ne!(hash(&spec, &migration), hash(&spec, &INPUTS));
            assert_ne!(hash(&spec, &migration), hash(&spec, &other));
        }
    }

    #[test]
    fn a_config_merged_by_an_init_container_rolls_even_for_a_ccm_that_reloads() {
        // The merged copy is written once, at pod start: only a new pod sees an edit.
        let merged = CcmSpec { inject_credentials: true, ..live() };
        for edited in edits() {
            assert_ne!(hash(&merged, &edited), hash(&merged, &INPUTS), "{edited:?}");
        }
    }

    #[test]
    fn the_hash_of_a_ccm_that_reads_them_at_start_is_the_one_it_always_had() {
        // Other platforms' pods do not roll on upgrade of the generator: same bytes hashed.
        let old = crate::graph::state::sha256(
            [INPUTS.cloud_conf, INPUTS.credentials, INPUTS.ca_bundle].join("\0").as_bytes(),
        );
        assert_eq!(hash(&upstream(), &INPUTS), old);
    }
}
