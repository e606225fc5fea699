use fake_kube_apiserver::FakeApiServer;
use serde_json::Value;

use super::*;

fn service(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Service".into()),
        namespace: Some("ns".into()),
        name: Some(name.into()),
        uid: Some(format!("uid-{name}")),
        ..ObjectReference::default()
    }
}

fn warning(reason: &str, note: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: reason.into(),
        note: Some(note.into()),
        action: reason.into(),
        secondary: None,
    }
}

fn recorder(fake: &FakeApiServer) -> Recorder {
    let reporter = Reporter { controller: "ccm".into(), instance: Some("ccm-1".into()) };
    Recorder::new(fake.client(), reporter)
}

/// Each Event's note and series count, in the order written.
fn notes(fake: &FakeApiServer) -> Vec<(String, Value)> {
    let mut events = fake.list("events.k8s.io/v1", "events");
    events.sort_by_key(|e| e["eventTime"].as_str().unwrap_or_default().to_owned());
    events
        .iter()
        .map(|e| (e["note"].as_str().unwrap().to_owned(), e["series"]["count"].clone()))
        .collect()
}

#[tokio::test]
async fn a_new_message_under_the_same_reason_is_an_event_of_its_own() {
    let fake = FakeApiServer::start().await.unwrap();
    let recorder = recorder(&fake);
    let web = service("web");
    recorder.publish(&warning("SyncLoadBalancerFailed", "quota exceeded"), &web).await.unwrap();
    recorder.publish(&warning("SyncLoadBalancerFailed", "subnet not found"), &web).await.unwrap();
    assert_eq!(
        notes(&fake),
        [("quota exceeded".to_owned(), Value::Null), ("subnet not found".to_owned(), Value::Null)],
        "the second message is read as written, not counted into the first"
    );
}

#[tokio::test]
async fn a_repeat_counts_into_the_first_events_series() {
    let fake = FakeApiServer::start().await.unwrap();
    let recorder = recorder(&fake);
    let web = service("web");
    for _ in 0..3 {
        recorder.publish(&warning("SyncLoadBalancerFailed", "quota exceeded"), &web).await.unwrap();
    }
    assert_eq!(notes(&fake), [("quota exceeded".to_owned(), Value::from(3))]);
    let event = &fake.list("events.k8s.io/v1", "events")[0];
    assert_eq!(event["reportingController"], "ccm");
    assert_eq!(event["reportingInstance"], "ccm-1");
    assert_eq!(event["type"], "Warning");
    assert_eq!(event["regarding"]["uid"], "uid-web");
    assert!(event["series"]["lastObservedTime"].is_string(), "{event}");
}

#[tokio::test]
async fn the_same_message_about_another_object_or_of_another_type_is_its_own_event() {
    let fake = FakeApiServer::start().await.unwrap();
    let recorder = recorder(&fake);
    let event = warning("EnsuredLoadBalancer", "done");
    recorder.publish(&event, &service("web")).await.unwrap();
    recorder.publish(&event, &service("api")).await.unwrap();
    recorder.publish(&Event { type_: EventType::Normal, ..event }, &service("web")).await.unwrap();
    let counts: Vec<Value> = notes(&fake).into_iter().map(|(_, count)| count).collect();
    assert_eq!(counts, [Value::Null, Value::Null, Value::Null]);
}

#[tokio::test]
async fn a_series_whose_event_is_gone_starts_again() {
    let fake = FakeApiServer::start().await.unwrap();
    let recorder = recorder(&fake);
    let web = service("web");
    let event = warning("SyncLoadBalancerFailed", "quota exceeded");
    recorder.publish(&event, &web).await.unwrap();
    let name =
        fake.list("events.k8s.io/v1", "events")[0]["metadata"]["name"].as_str().unwrap().to_owned();
    fake.delete("events.k8s.io/v1", "events", "ns", &name);
    recorder.publish(&event, &web).await.unwrap();
    assert_eq!(notes(&fake), [("quota exceeded".to_owned(), Value::Null)], "created again");
    recorder.publish(&event, &web).await.unwrap();
    assert_eq!(notes(&fake), [("quota exceeded".to_owned(), Value::from(2))]);
}
