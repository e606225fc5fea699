//! A controller started, stopped or started again in place when the part of the cloud config
//! that decides whether and how it runs changes (`[Route] router-id` coming or going,
//! `[LoadBalancer] enabled`): no process restart, no leaderless gap.

use std::future::Future;

use tokio::sync::watch;

use super::ControllerName;

/// Runs `start(key)` while `keys` holds `Some(key)`; when the key changes, the running
/// controller is dropped (as a restart would end it: what it writes is guarded and made again
/// by the next one) and started again with the new key, or not at all for `None`. Returns only
/// when the controller itself ends.
pub(crate) async fn switch<K, F, Fut>(
    name: ControllerName,
    mut keys: watch::Receiver<Option<K>>,
    start: F,
) where
    K: Clone,
    F: Fn(K) -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        let key = keys.borrow_and_update().clone();
        let on = key.is_some();
        let running = async {
            match key {
                Some(key) => start(key).await,
                None => std::future::pending().await,
            }
        };
        // Once the config's sender is gone the last key holds for good: the running
        // controller goes on, never started again.
        let changed = async {
            if keys.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            () = running => return,
            () = changed => {
                let now = keys.borrow().is_some();
                let what = match (on, now) {
                    (true, true) => "its settings changed: restarting it",
                    (true, false) => "turned off by the cloud config: stopping it",
                    (false, true) => "turned on by the cloud config: starting it",
                    (false, false) => continue,
                };
                tracing::info!(controller = name.as_str(), "{what}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_changed_key_restarts_the_controller_none_stops_it_and_some_starts_it_again() {
        let (keys, rx) = watch::channel(Some(1));
        let started = Arc::new(Mutex::new(Vec::new()));
        let seen = started.clone();
        tokio::spawn(switch(ControllerName::Route, rx, move |key: u32| {
            seen.lock().unwrap().push(key);
            std::future::pending::<()>()
        }));
        let settle = || tokio::time::sleep(Duration::from_millis(10));
        settle().await;
        keys.send_replace(Some(2));
        settle().await;
        keys.send_replace(None);
        settle().await;
        keys.send_replace(None);
        settle().await;
        keys.send_replace(Some(3));
        settle().await;
        assert_eq!(*started.lock().unwrap(), [1, 2, 3]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_running_controller_goes_on_unrestarted_when_the_config_sender_is_gone() {
        let (keys, rx) = watch::channel(Some(1));
        let started = Arc::new(Mutex::new(Vec::new()));
        let seen = started.clone();
        let task = tokio::spawn(switch(ControllerName::Route, rx, move |key: u32| {
            seen.lock().unwrap().push(key);
            std::future::pending::<()>()
        }));
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(keys);
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(*started.lock().unwrap(), [1], "started once, never again");
        assert!(!task.is_finished(), "the controller still runs");
    }
}
