//! Test fixtures: a fake [`Cloud`], Node builders, a Context on the fake API server.

use std::sync::{Arc, Mutex};

use kube::api::Api;
use kube::runtime::reflector;
use serde_json::Value;

use testkit::kube::NodeFixture;

use super::Context;
use crate::cloud::neutron::{FixedIp, Port};
use crate::cloud::nova::{Flavor, ServerAddress};
use crate::cloud::{Cloud, Error, Instance, Lookup, Result, Server, ServerState};
use crate::config::Networking;
use crate::controllers::projection::CachedNode;
use crate::metrics::Metrics;
use fake_kube_apiserver::FakeApiServer;

/// An in-memory cloud with a call log and an injectable failure.
#[derive(Debug, Default)]
pub(crate) struct FakeCloud {
    pub(crate) instances: Mutex<Vec<Instance>>,
    pub(crate) failure: Mutex<Option<Error>>,
    /// A failure of the project-wide lists only (`servers`, `ports`), lookups unaffected.
    pub(crate) list_failure: Mutex<Option<Error>>,
    pub(crate) calls: Mutex<Vec<String>>,
    pub(crate) region: Option<String>,
}

impl FakeCloud {
    pub(crate) fn with(instances: Vec<Instance>) -> Arc<Self> {
        Arc::new(FakeCloud { instances: Mutex::new(instances), ..FakeCloud::default() })
    }

    pub(crate) fn fail_with(&self, error: Error) {
        *self.failure.lock().unwrap() = Some(error);
    }

    pub(crate) fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    /// Logs a listing call and fails it when a failure is set.
    fn listed(&self, what: &str) -> Result<()> {
        self.calls.lock().unwrap().push(what.into());
        let failure = self.failure.lock().unwrap().clone();
        failure.or_else(|| self.list_failure.lock().unwrap().clone()).map_or(Ok(()), Err)
    }

    fn find(&self, lookup: &Lookup) -> Result<Instance> {
        self.calls.lock().unwrap().push(format!("{lookup:?}"));
        if let Some(error) = self.failure.lock().unwrap().clone() {
            return Err(error);
        }
        let all = self.instances.lock().unwrap();
        let found = all.iter().find(|i| match lookup {
            Lookup::Id(id) => i.server.id == *id,
            Lookup::Name(name) => i.server.name == *name,
        });
        found.cloned().ok_or_else(|| Error::NotFound { what: format!("{lookup:?}") })
    }
}

impl Cloud for FakeCloud {
    async fn server(&self, lookup: &Lookup) -> Result<Server> {
        self.find(lookup).map(|i| i.server)
    }

    async fn instance(&self, lookup: &Lookup) -> Result<Instance> {
        self.find(lookup)
    }

    async fn servers(&self, since: Option<&str>) -> Result<Vec<Server>> {
        self.listed(if since.is_some() { "changes" } else { "servers" })?;
        let all = self.instances.lock().unwrap();
        let changed = |s: &&Server| since.is_none_or(|t| s.updated.as_str() >= t);
        Ok(all.iter().map(|i| &i.server).filter(changed).cloned().collect())
    }

    async fn server_states(&self) -> Result<Vec<ServerState>> {
        self.listed("states")?;
        let all = self.instances.lock().unwrap();
        let state = |i: &Instance| ServerState {
            id: i.server.id.clone(),
            name: i.server.name.clone(),
            status: i.server.status.clone(),
        };
        Ok(all.iter().map(state).collect())
    }

    async fn ports(&self, devices: Option<&[String]>) -> Result<Vec<Port>> {
        // As the trait says: no request for an empty list of servers.
        if devices.is_some_and(<[String]>::is_empty) {
            return Ok(Vec::new());
        }
        self.listed(if devices.is_some() { "ports of servers" } else { "ports" })?;
        let all = self.instances.lock().unwrap();
        let wanted = |i: &&Instance| devices.is_none_or(|d| d.contains(&i.server.id));
        Ok(all.iter().filter(wanted).flat_map(|i| i.ports.clone()).collect())
    }

    fn region(&self) -> Option<String> {
        self.region.clone()
    }
}

/// A server `name` with id `id-<name>`, one port on `private` with `ip`, flavor and AZ.
pub(crate) fn instance(name: &str, ip: &str, status: &str) -> Instance {
    let mut addresses = std::collections::BTreeMap::new();
    addresses.insert(
        "private".to_owned(),
        vec![ServerAddress { addr: ip.into(), version: 4, kind: "fixed".into() }],
    );
    Instance {
        server: Server {
            id: format!("id-{name}"),
            name: name.into(),
            status: status.into(),
            availability_zone: "nova zone/1".into(),
            flavor: Flavor { id: None, original_name: Some("m1.small".into()) },
            addresses,
            ..Server::default()
        },
        ports: vec![Port {
            id: format!("port-{name}"),
            device_id: format!("id-{name}"),
            status: "ACTIVE".into(),
            fixed_ips: vec![FixedIp { ip_address: ip.into(), subnet_id: "s".into() }],
            ..Port::default()
        }],
        flavor_name: Some("m1.small".into()),
    }
}

/// A control-plane Node as kubelet registers it with `--cloud-provider=external`: the
/// uninitialized taint beside the control-plane taint the CCM must keep.
pub(crate) fn control_plane(name: &str) -> Value {
    NodeFixture::tainted(name).taint("node-role.kubernetes.io/master", None).build()
}

/// A Context on the fake API server (its Node store stays empty: tests pass nodes explicitly).
pub(crate) fn context(fake: &FakeApiServer, cloud: Arc<FakeCloud>) -> Arc<Context<FakeCloud>> {
    let (reader, _writer) = reflector::store::<CachedNode>();
    Arc::new(Context::new(fake.client(), cloud, Metrics::shared(), Networking::default(), reader))
}

/// Every node, as the API server has them now.
pub(crate) async fn nodes(ctx: &Context<FakeCloud>) -> Vec<Arc<CachedNode>> {
    let list = Api::<CachedNode>::all(ctx.client.clone()).list(&Default::default()).await.unwrap();
    list.items.into_iter().map(Arc::new).collect()
}
