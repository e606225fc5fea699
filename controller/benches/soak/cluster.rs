//! The API server the soak drives, as World and check.rs use it: core/v1 objects as JSON, in
//! and out, synchronously; the fake API server here, the real kube-apiserver in real_kube.rs.

use fake_kube_apiserver::FakeApiServer;
use serde_json::Value;
use testkit::kube_front::Upstream;

use crate::real_kube::RealKube;

/// The operations of the soak on its cluster (`plural`: `services`, `nodes`; `namespace`: `""`
/// for a Node). A failure panics, naming the object: the soak cannot go on without its world.
pub(crate) trait Cluster {
    /// Creates the object with its `status` (the real server drops a created status: it is
    /// written through the status subresource after); returns it as stored.
    fn create(&self, plural: &str, namespace: &str, object: Value) -> Value;
    /// Merge-patches the object, its `status` through the status subresource; returns it.
    fn patch(&self, plural: &str, namespace: &str, name: &str, patch: Value) -> Value;
    /// The object, if it exists.
    fn get(&self, plural: &str, namespace: &str, name: &str) -> Option<Value>;
    /// Deletes it (a finalizer only marks it); gone already is fine.
    fn delete(&self, plural: &str, namespace: &str, name: &str);
    /// Every object of the resource, in all namespaces.
    fn list(&self, plural: &str) -> Vec<Value>;
}

impl Cluster for FakeApiServer {
    fn create(&self, plural: &str, namespace: &str, object: Value) -> Value {
        FakeApiServer::create(self, "v1", plural, namespace, object)
    }

    fn patch(&self, plural: &str, namespace: &str, name: &str, patch: Value) -> Value {
        FakeApiServer::patch(self, "v1", plural, namespace, name, patch)
    }

    fn get(&self, plural: &str, namespace: &str, name: &str) -> Option<Value> {
        FakeApiServer::get(self, "v1", plural, namespace, name)
    }

    fn delete(&self, plural: &str, namespace: &str, name: &str) {
        FakeApiServer::delete(self, "v1", plural, namespace, name);
    }

    fn list(&self, plural: &str) -> Vec<Value> {
        FakeApiServer::list(self, "v1", plural)
    }
}

/// The API server of this run, and where the CCM's slow front forwards to.
pub(crate) enum Server {
    Fake(FakeApiServer),
    Real(Box<RealKube>),
}

impl Server {
    pub(crate) fn cluster(&self) -> &dyn Cluster {
        match self {
            Server::Fake(fake) => fake,
            Server::Real(real) => real.as_ref(),
        }
    }

    /// The front's upstream: the fake over plain HTTP, the real one as the soak's user.
    pub(crate) fn upstream(&self) -> Upstream {
        match self {
            Server::Fake(fake) => Upstream::plain(&fake.url()),
            Server::Real(real) => Upstream::from_kubeconfig(&real.kubeconfig),
        }
    }
}
