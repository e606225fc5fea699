//! The shared schedule against the in-memory Octavia (`in_memory`), on paused time.

use super::*;
use crate::controllers::service::in_memory::{Memory, PROJECT, Stored};

/// Load balancer `id` of the project, `PENDING_UPDATE` for `busy` more reads.
fn pending(id: &str, busy: u32) -> Stored {
    let lb = LoadBalancer {
        id: id.to_owned(),
        project_id: PROJECT.to_owned(),
        provisioning_status: "PENDING_UPDATE".to_owned(),
        ..LoadBalancer::default()
    };
    Stored { lb, busy, ..Stored::default() }
}

#[tokio::test(start_paused = true)]
async fn twenty_waits_at_once_are_answered_by_one_list_per_tick() {
    let memory = Memory::default();
    let waits = Waits::default();
    let lbs: Vec<LoadBalancer> =
        (0..20).map(|i| memory.with(pending(&format!("lb-{i}"), 2))).collect();

    let done = futures::future::join_all(lbs.iter().map(|lb| waits.active(&memory, lb))).await;

    assert!(done.iter().all(|lb| lb.as_ref().unwrap().provisioning_status == ACTIVE));
    // Each load balancer is ACTIVE on its third read: three lists served all twenty.
    assert_eq!(memory.calls(), ["list_project"; 3]);
    assert!(waits.last.try_lock().unwrap().is_none(), "the list is let go with the last wait");
}

#[tokio::test(start_paused = true)]
async fn a_wait_never_reads_a_list_started_before_it_began() {
    let memory = Memory::default();
    let waits = Waits::default();
    // Another Service's load balancer keeps the schedule busy: lists at 0.5 s, 1.25 s, …
    let slow = memory.with(pending("lb-slow", 1_000));
    let mut ours = pending("lb-ours", 0);
    ours.lb.provisioning_status = ACTIVE.to_owned();
    let ours = memory.with(ours);
    let slow_wait = waits.active(&memory, &slow);
    let our_wait = async {
        // After the list at 1.25 s (which has ours ACTIVE), a change makes it busy again.
        tokio::time::sleep(Duration::from_millis(1_300)).await;
        if let Some(stored) = memory.state().lbs.get_mut("lb-ours") {
            (stored.lb.provisioning_status, stored.busy) = ("PENDING_UPDATE".to_owned(), 2);
        }
        let lb = waits.active(&memory, &ours).await.unwrap();
        assert_eq!(memory.state().lbs["lb-ours"].lb.provisioning_status, ACTIVE);
        lb
    };

    tokio::select! {
        lb = our_wait => assert_eq!(lb.provisioning_status, ACTIVE),
        _ = slow_wait => panic!("the slow load balancer went ACTIVE first"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_load_balancer_of_no_known_project_is_asked_for_alone() {
    let memory = Memory::default();
    let mut alone = pending("lb-alone", 2);
    alone.lb.project_id.clear();
    let lb = memory.with(alone);

    Waits::default().active(&memory, &lb).await.unwrap();

    assert_eq!(memory.calls(), ["get"; 3]);
}

#[tokio::test(start_paused = true)]
async fn gone_is_not_in_the_list_and_a_lost_one_fails_the_wait_for_active() {
    let memory = Memory::default();
    let waits = Waits::default();
    let lb = memory.with(pending("lb-going", 2));
    memory.state().lbs.get_mut("lb-going").unwrap().lb.provisioning_status =
        "PENDING_DELETE".to_owned();

    waits.gone(&memory, &lb).await.unwrap();
    assert_eq!(memory.calls(), ["list_project"; 3]);

    let error = waits.active(&memory, &lb).await.unwrap_err();
    assert!(
        matches!(&error, WaitError::Cloud { source, .. } if source.kind() == ErrorKind::NotFound),
        "{error:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn pending_past_the_limit_and_error_end_the_wait_with_what_was_seen() {
    let memory = Memory::default();
    let lb = memory.with(pending("lb-stuck", u32::MAX));

    let error = Waits::new(Duration::from_secs(30)).active(&memory, &lb).await.unwrap_err();
    assert_eq!(error.to_string(), "load balancer lb-stuck still PENDING_UPDATE after 30 s");

    memory.state().lbs.get_mut("lb-stuck").unwrap().lb.provisioning_status = ERROR.to_owned();
    let error = Waits::default().active(&memory, &lb).await.unwrap_err();
    assert_eq!(error.to_string(), "load balancer lb-stuck went to provisioning status ERROR");
}
