//! The g2 cloud-provider config IBM Cloud VPC and PowerVS share: `[global]`, `[kubernetes]`, `[provider]`.
//!
//! The installer renders it from Go templates (`pkg/asset/manifests/{ibmcloud,powervs}/
//! cloudproviderconfig.go`): one `key = value` line per key, no blank line between sections,
//! no quoting. Values are written the same way, except that one gcfg would misread (a `#`,
//! say) is quoted with [`gcfg::quote`], so the CCM reads back what was meant. An empty value
//! stays `key = `, byte for byte what the installer writes.

use crate::installconfig::{IbmService, ServiceEndpoint};
use ccm_formats::gcfg;

/// Where the CCM reads the API key (mounted from its credentials Secret).
pub(crate) const CREDENTIALS_PATH: &str = "/etc/vpc/ibmcloud_api_key";

/// The `[provider]` keys both platforms start with: the account and the VPC the CCM manages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Vpc<'a> {
    /// The API key's account (`accountID` and `g2workerServiceAccountID`).
    pub(crate) account_id: &'a str,
    /// The infrastructure ID (`clusterID`).
    pub(crate) cluster_id: &'a str,
    /// The VPC region.
    pub(crate) region: &'a str,
    /// The resource group the cluster's VPC resources live in.
    pub(crate) resource_group: &'a str,
    /// The VPC.
    pub(crate) vpc_name: &'a str,
    /// The subnets the CCM may place load balancers in.
    pub(crate) subnets: Vec<String>,
}

impl Vpc<'_> {
    /// The nine keys, in the installer's order (the same on both platforms).
    pub(crate) fn entries(&self) -> Vec<(&'static str, String)> {
        [
            ("accountID", self.account_id),
            ("clusterID", self.cluster_id),
            ("cluster-default-provider", "g2"),
            ("region", self.region),
            ("g2Credentials", CREDENTIALS_PATH),
            ("g2ResourceGroupName", self.resource_group),
            ("g2VpcName", self.vpc_name),
            ("g2workerServiceAccountID", self.account_id),
        ]
        .into_iter()
        .map(|(key, value)| (key, value.to_owned()))
        .chain([("g2VpcSubnetNames", self.subnets.join(","))])
        .collect()
    }
}

/// `[global]` (version 1.1.0), `[kubernetes]` (no kubeconfig: the CCM runs in-cluster) and
/// `[provider]` with `entries`, one line each, in order.
pub(crate) fn write(entries: &[(&str, String)]) -> String {
    let mut out =
        String::from("[global]\nversion = 1.1.0\n[kubernetes]\nconfig-file = \"\"\n[provider]\n");
    for (key, value) in entries {
        out.push_str(key);
        out.push_str(" = ");
        if !value.is_empty() {
            out.push_str(&gcfg::quote(value));
        }
        out.push('\n');
    }
    out
}

/// The URL of the endpoint override named `name`. Names match ignoring ASCII case (the
/// installer accepts only openshift/api's spelling, `IAM`, so `iam` is a harmless superset);
/// with duplicates, which validation rejects, the last wins as in the installer's loop.
pub(crate) fn endpoint(endpoints: &[ServiceEndpoint], service: IbmService) -> Option<&str> {
    endpoints.iter().rfind(|e| e.is_for(service.as_str())).map(|e| e.url.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vpc() -> Vpc<'static> {
        Vpc {
            account_id: "acct",
            cluster_id: "ocp-x7k2p",
            region: "us-south",
            resource_group: "rg",
            vpc_name: "ocp-x7k2p-vpc",
            subnets: vec!["a".into(), "b".into()],
        }
    }

    #[test]
    fn the_head_and_the_vpc_keys_read_back_through_gcfg() {
        let text = write(&vpc().entries());
        assert_eq!(
            text,
            "[global]\nversion = 1.1.0\n[kubernetes]\nconfig-file = \"\"\n[provider]\n\
             accountID = acct\nclusterID = ocp-x7k2p\ncluster-default-provider = g2\n\
             region = us-south\ng2Credentials = /etc/vpc/ibmcloud_api_key\n\
             g2ResourceGroupName = rg\ng2VpcName = ocp-x7k2p-vpc\n\
             g2workerServiceAccountID = acct\ng2VpcSubnetNames = a,b\n"
        );
        let doc = gcfg::parse(&text).unwrap();
        assert_eq!(doc.get("kubernetes", "config-file"), Some(""));
        assert_eq!(doc.get("provider", "g2VpcSubnetNames"), Some("a,b"));
    }

    #[test]
    fn empty_values_stay_bare_and_misreadable_ones_are_quoted() {
        let text = write(&[("empty", String::new()), ("hash", "rg#1".into())]);
        assert!(text.ends_with("[provider]\nempty = \nhash = \"rg#1\"\n"), "{text}");
        let doc = gcfg::parse(&text).unwrap();
        assert_eq!(
            (doc.get("provider", "empty"), doc.get("provider", "hash")),
            (Some(""), Some("rg#1"))
        );
    }

    #[test]
    fn endpoints_match_by_name_ignoring_case_and_the_last_wins() {
        let e = |name: &str, url: &str| ServiceEndpoint { name: name.into(), url: url.into() };
        let list = [e("IAM", "https://a"), e("vpc", "https://b"), e("iam", "https://c")];
        assert_eq!(endpoint(&list, IbmService::Iam), Some("https://c"));
        assert_eq!(endpoint(&list, IbmService::Vpc), Some("https://b"));
        assert_eq!(endpoint(&list, IbmService::ResourceManager), None);
    }
}
