//! One change to a load balancer's tree, and the call that makes it.

use osauth::Session;

use super::{ListenerSpec, MemberSpec, MonitorSpec, PoolSpec};

/// One Octavia call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// A new Service port: the listener with its pool, members and monitor.
    CreateListener(ListenerSpec),
    /// A listener whose port is gone (its pool is deleted first).
    DeleteListener {
        listener_id: String,
    },
    /// A pool for a listener that has none (or had one of the wrong protocol).
    CreatePool {
        listener_id: String,
        pool: PoolSpec,
    },
    /// A pool going with its listener, or being replaced (members and monitor go with it).
    DeletePool {
        pool_id: String,
    },
    /// allowed_cidrs, connection limit, timeouts, name or tags changed.
    UpdateListener {
        listener_id: String,
        spec: ListenerSpec,
    },
    /// The balancing method or the name changed.
    UpdatePool {
        pool_id: String,
        lb_algorithm: String,
        name: String,
    },
    /// The member set changed: one batch call sets it.
    ReplaceMembers {
        pool_id: String,
        members: Vec<MemberSpec>,
    },
    CreateMonitor {
        pool_id: String,
        monitor: MonitorSpec,
    },
    UpdateMonitor {
        monitor_id: String,
        monitor: MonitorSpec,
    },
    DeleteMonitor {
        monitor_id: String,
    },
    /// The load balancer's own name, description and tags (adopting one another controller
    /// made).
    UpdateLoadBalancer {
        name: String,
        description: String,
        tags: Vec<String>,
    },
}

impl Change {
    /// A fixed label for metrics and logs.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Change::CreateListener(_) => "listener_create",
            Change::DeleteListener { .. } => "listener_delete",
            Change::CreatePool { .. } => "pool_create",
            Change::DeletePool { .. } => "pool_delete",
            Change::UpdateListener { .. } => "listener_update",
            Change::UpdatePool { .. } => "pool_update",
            Change::ReplaceMembers { .. } => "members_replace",
            Change::CreateMonitor { .. } => "monitor_create",
            Change::UpdateMonitor { .. } => "monitor_update",
            Change::DeleteMonitor { .. } => "monitor_delete",
            Change::UpdateLoadBalancer { .. } => "loadbalancer_update",
        }
    }
}

/// Makes `change`: exactly one call (the load balancer is locked until it is ACTIVE again);
/// the ID of what it created, if it created something. A new listener or pool is created
/// alone: its pool, members and monitor are further changes.
pub(crate) async fn apply(
    session: &Session,
    load_balancer_id: &str,
    change: &Change,
) -> Result<Option<String>, osauth::Error> {
    let done = |r: Result<(), osauth::Error>| r.map(|()| None);
    match change {
        Change::CreateListener(spec) => {
            super::create_listener(session, load_balancer_id, spec).await.map(Some)
        }
        Change::DeleteListener { listener_id } => {
            done(super::delete_listener(session, listener_id).await)
        }
        Change::CreatePool { listener_id, pool } => {
            super::create_pool(session, listener_id, pool).await.map(Some)
        }
        Change::DeletePool { pool_id } => done(super::delete_pool(session, pool_id).await),
        Change::UpdateListener { listener_id, spec } => {
            done(super::update_listener(session, listener_id, spec).await)
        }
        Change::UpdatePool { pool_id, lb_algorithm, name } => {
            done(super::update_pool(session, pool_id, lb_algorithm, name).await)
        }
        Change::ReplaceMembers { pool_id, members } => {
            done(super::replace_members(session, pool_id, members).await)
        }
        Change::CreateMonitor { pool_id, monitor } => {
            done(super::create_monitor(session, pool_id, monitor).await)
        }
        Change::UpdateMonitor { monitor_id, monitor } => {
            done(super::update_monitor(session, monitor_id, monitor).await)
        }
        Change::DeleteMonitor { monitor_id } => {
            done(super::delete_monitor(session, monitor_id).await)
        }
        Change::UpdateLoadBalancer { name, description, tags } => {
            let body = serde_json::json!({"loadbalancer":
                {"name": name, "description": description, "tags": tags}});
            done(super::update_load_balancer(session, load_balancer_id, &body).await)
        }
    }
}
