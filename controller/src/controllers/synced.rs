//! No controller acts on a Node cache that has not synced.
//!
//! The reflector keeps the first list of Nodes aside until its last page arrived (kube-runtime
//! swaps it in whole at `InitDone`): until then the cache is empty, and a controller reading it
//! would take every node for gone. The service controller once did, and replaced every pool's
//! members with an empty list for the seconds the list took (issue 35). Every controller that
//! reads the cache waits here first; upstream's controllers wait for their informers the same way.

use kube::runtime::reflector::Store;

use super::ControllerName;
use super::projection::CachedNode;

/// Waits until `nodes` holds the first complete Node list; `false` when it never will (the
/// watch that fills it is gone, and so is the process soon).
pub(crate) async fn node_cache(nodes: &Store<CachedNode>, controller: ControllerName) -> bool {
    let ready = nodes.wait_until_ready();
    tokio::pin!(ready);
    let synced = match futures::poll!(ready.as_mut()) {
        std::task::Poll::Ready(done) => done,
        std::task::Poll::Pending => {
            tracing::info!(controller = controller.as_str(), "waiting for the Node list");
            let done = ready.await;
            if done.is_ok() {
                let nodes = nodes.state().len();
                tracing::info!(controller = controller.as_str(), nodes, "Node list synced");
            }
            done
        }
    };
    synced.is_ok()
}
