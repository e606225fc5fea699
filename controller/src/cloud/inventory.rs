//! Everything of one kind the credentials may list in a project, for `purge`: the load
//! balancers and listeners (page after page), the security groups and Octavia's ports (the
//! floating IPs come through `LoadBalancing::floating_ips` with a `project_id` filter). `None` for the project
//! lists what the credentials see: their own project, or every project for an admin's (purge
//! checks that what it would delete lies in one).

use super::neutron::{self, OwnedPort};
use super::octavia::{self, Listener, LoadBalancer};
use super::security_groups::{self, SecurityGroup};
use super::{OpenStack, Result};

impl OpenStack {
    /// The load balancers of `project` (all pages).
    pub(crate) async fn all_load_balancers(
        &self,
        project: Option<&str>,
    ) -> Result<Vec<LoadBalancer>> {
        let what = project_text("the load balancers", project);
        self.call("load-balancer", "loadbalancer_list_project", &what, |s| async move {
            octavia::load_balancers_of(&s, project).await
        })
        .await
    }

    /// The listeners of `project` (all pages), on every load balancer.
    pub(crate) async fn all_listeners(&self, project: Option<&str>) -> Result<Vec<Listener>> {
        let what = project_text("the listeners", project);
        self.call("load-balancer", "listener_list", &what, |s| async move {
            octavia::listeners_of(&s, project).await
        })
        .await
    }

    /// The ports Octavia owns (its VIP ports), in one request.
    pub(crate) async fn octavia_ports(&self) -> Result<Vec<OwnedPort>> {
        self.call("network", "port_list", "the ports Octavia owns", |s| async move {
            neutron::octavia_ports(&s).await
        })
        .await
    }

    /// The security groups of `project`, with their rules.
    pub(crate) async fn all_security_groups(
        &self,
        project: Option<&str>,
    ) -> Result<Vec<SecurityGroup>> {
        let what = project_text("the security groups", project);
        let filter = &project_filter(project);
        self.call("network", "security_group_list", &what, |s| async move {
            security_groups::list(&s, filter).await
        })
        .await
    }
}

/// Neutron's filter for `project`: none without one.
fn project_filter(project: Option<&str>) -> Vec<(&str, &str)> {
    project.map(|p| ("project_id", p)).into_iter().collect()
}

fn project_text(what: &str, project: Option<&str>) -> String {
    match project {
        Some(project) => format!("{what} of project {project}"),
        None => format!("{what} the credentials can list"),
    }
}
