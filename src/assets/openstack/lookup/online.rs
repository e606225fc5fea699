//! The cloud's answers through osauth: one session per run, every call under a timeout.

use std::sync::Mutex;
use std::time::Duration;

use osauth::services::{GenericService, NETWORK, VersionSelector};
use osauth::{ErrorKind, Session};
use serde::Deserialize;

use super::{Lookup, session};
use crate::assets::openstack::Cloud;
use crate::graph::AssetError;

/// Octavia is not among osauth's predefined services.
const LOAD_BALANCER: GenericService =
    GenericService::new("load-balancer", VersionSelector::Major(2));

/// A cloud that does not answer must not hang `create manifests`.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Looks facts up in the selected cloud; authenticates on first use.
#[derive(Default)]
pub struct Online {
    connection: Mutex<Option<Connection>>,
}

struct Connection {
    runtime: tokio::runtime::Runtime,
    session: Session,
}

impl std::fmt::Debug for Online {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Online")
    }
}

#[derive(Deserialize)]
struct Networks {
    networks: Vec<Network>,
}

#[derive(Deserialize)]
struct NetworkBody {
    network: Network,
}

#[derive(Deserialize)]
struct Network {
    id: String,
}

impl Online {
    fn with_session<T>(
        &self,
        cloud: &Cloud,
        call: impl AsyncFnOnce(&Session) -> Result<T, osauth::Error>,
    ) -> Result<T, AssetError> {
        let mut guard = self.connection.lock().map_err(|_| "the cloud connection was poisoned")?;
        if guard.is_none() {
            *guard = Some(connect(cloud)?);
        }
        let Connection { runtime, session } = guard.as_ref().expect("connected above");
        runtime
            .block_on(async { tokio::time::timeout(TIMEOUT, call(session)).await })
            .map_err(|_| unreachable(cloud, &format!("no answer within {}s", TIMEOUT.as_secs())))?
            .map_err(|e| unreachable(cloud, &e.to_string()))
    }
}

fn connect(cloud: &Cloud) -> Result<Connection, AssetError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let credentials = session::credentials(cloud)?;
    let session = runtime
        .block_on(async {
            tokio::time::timeout(TIMEOUT, ccm_openstack_auth::connect(&credentials, TIMEOUT)).await
        })
        .map_err(|_| unreachable(cloud, &format!("no answer within {}s", TIMEOUT.as_secs())))?
        .map_err(|e| unreachable(cloud, &e.to_string()))?;
    Ok(Connection { runtime, session })
}

fn unreachable(cloud: &Cloud, why: &str) -> AssetError {
    let url = cloud.entry.auth.auth_url.as_deref().unwrap_or("(no auth_url)");
    format!(
        "cloud {:?} at {url}: {why}; check clouds.yaml, or run with --offline (externalNetwork \
         must then be a network ID)",
        cloud.name
    )
    .into()
}

impl Lookup for Online {
    fn network_id(&self, cloud: &Cloud, name_or_id: &str) -> Result<String, AssetError> {
        let name = name_or_id.to_owned();
        let found = self.with_session(cloud, async |session| {
            let by_name: Networks =
                session.get(NETWORK, &["networks"]).query(&[("name", &name)]).fetch().await?;
            if !by_name.networks.is_empty() || !crate::uuid::is_canonical(&name) {
                return Ok(by_name.networks);
            }
            match session.get(NETWORK, &["networks", &name]).fetch::<NetworkBody>().await {
                Ok(body) => Ok(vec![body.network]),
                Err(e) if e.kind() == ErrorKind::ResourceNotFound => Ok(Vec::new()),
                Err(e) => Err(e),
            }
        })?;
        match found.as_slice() {
            [one] => Ok(one.id.clone()),
            [] => Err(format!(
                "platform.openstack.externalNetwork: no network {name_or_id:?} in cloud {:?}",
                cloud.name
            )
            .into()),
            many => Err(format!(
                "platform.openstack.externalNetwork: {} networks are named {name_or_id:?} ({}): \
                 give the ID instead",
                many.len(),
                many.iter().map(|n| n.id.as_str()).collect::<Vec<_>>().join(", ")
            )
            .into()),
        }
    }

    fn has_load_balancer(&self, cloud: &Cloud) -> Result<bool, AssetError> {
        self.with_session(cloud, async |session| {
            match session.get_endpoint(LOAD_BALANCER, std::iter::empty::<&str>()).await {
                Ok(_) => Ok(true),
                Err(e) if e.kind() == ErrorKind::EndpointNotFound => Ok(false),
                Err(e) => Err(e),
            }
        })
    }
}
