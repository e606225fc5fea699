//! The image scripts/image.sh built, as the kubelet's containerd gets it.

use std::path::PathBuf;

use serde_json::Value;

/// The image of `target/image` (`$CARGO_TARGET_DIR/image`).
pub struct Image {
    /// Its OCI layout as `layout:tag`.
    pub source: String,
    /// The name data/images.json gives it: what every manifest names.
    pub name: String,
    /// Its image ID (its config's digest): what the runtime reports in a pod's `imageID`.
    pub id: String,
}

impl Image {
    /// Panics saying how to build it when there is none.
    pub fn built() -> Image {
        let root = crate::repo();
        let target =
            std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
        let out = target.join("image");
        let digest = std::fs::read_to_string(out.join("digest")).unwrap_or_else(|e| {
            panic!("no image in {} ({e}): build it with scripts/image.sh", out.display())
        });
        let images: Value =
            serde_json::from_str(&std::fs::read_to_string(root.join("data/images.json")).unwrap())
                .unwrap();
        let name = images["ccm-assets"].as_str().unwrap().to_owned();
        let tag = name.rsplit_once(':').unwrap().1;
        let source = format!("{}:{tag}", out.join("oci").display());
        let blob = |digest: &str| {
            let path =
                out.join("oci/blobs/sha256").join(digest.trim().trim_start_matches("sha256:"));
            serde_json::from_slice::<Value>(&std::fs::read(path).unwrap()).unwrap()
        };
        let id = blob(&digest)["config"]["digest"].as_str().unwrap().to_owned();
        Image { source, name, id }
    }

    /// Imports the image into the containerd of the cluster whose env file is `env_file`
    /// (scripts/kube-up.sh's `KUBE_IMPORT_IMAGE`), so that pods naming it run it.
    pub fn import(&self, kube: &crate::kube_stack::KubeStack) {
        let env_file = std::env::var(crate::kube_stack::VAR).expect("the cluster's env file");
        let out = std::process::Command::new(&kube["KUBE_IMPORT_IMAGE"])
            .args([&env_file, &self.source, &self.name])
            .output()
            .expect("KUBE_IMPORT_IMAGE runs");
        assert!(
            out.status.success(),
            "importing {} failed: {}{}",
            self.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
