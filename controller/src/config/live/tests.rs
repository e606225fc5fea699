use std::sync::Mutex;

use testkit::mount::KubeletMount;

use super::*;

const CONF: &str = "cloud.conf";
const GOOD: &str = "[Global]\nauth-url = http://keystone:5000/v3\nusername = u\npassword = p\n\
                    [LoadBalancer]\nlb-method = ROUND_ROBIN\n";

fn lb_method(settings: &Settings) -> &str {
    &settings.config.load_balancer.lb_method
}

/// Runs the watch on `mounted`, from its settings now; the outcomes it reports.
fn start(mounted: &KubeletMount) -> (Current, Arc<Mutex<Vec<Outcome>>>) {
    let first = read(&mounted.path(CONF), &[], 1).expect("the start's settings");
    let (tx, rx) = watch::channel(Arc::new(first));
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let seen = outcomes.clone();
    let report = move |o: &Outcome| seen.lock().unwrap().push(o.clone());
    tokio::spawn(watch_file(mounted.path(CONF), Vec::new(), tx, report));
    (rx, outcomes)
}

/// Lets the watch look a few times (virtual time).
async fn looks(n: u32) {
    tokio::time::sleep(POLL * n + SETTLE).await;
}

#[tokio::test(start_paused = true)]
async fn a_swapped_mount_is_applied_a_bad_edit_kept_out_and_reported_once_and_the_next_applied() {
    let mut mounted = KubeletMount::new(&[(CONF, GOOD)]);
    let (current, outcomes) = start(&mounted);
    looks(3).await;
    assert_eq!(*outcomes.lock().unwrap(), [], "nothing changed, nothing told");

    mounted.swap(&[(CONF, &GOOD.replace("ROUND_ROBIN", "LEAST_CONNECTIONS"))]);
    looks(2).await;
    let now = current.borrow().clone();
    assert_eq!((now.generation, lb_method(&now)), (2, "LEAST_CONNECTIONS"));

    mounted.swap(&[(CONF, &format!("{GOOD}[Route\nrouter-id = r\n"))]);
    looks(5).await;
    let sideways = "[Global]\nauth-url = http://keystone:5000/v3\nusername = u\npassword = p\n\
                    os-endpoint-type = sideways\n";
    mounted.swap(&[(CONF, sideways)]);
    looks(5).await;
    let now = current.borrow().clone();
    assert_eq!((now.generation, lb_method(&now)), (2, "LEAST_CONNECTIONS"), "the last good kept");

    mounted.swap(&[(CONF, &GOOD.replace("ROUND_ROBIN", "SOURCE_IP"))]);
    looks(2).await;
    let now = current.borrow().clone();
    assert_eq!((now.generation, lb_method(&now)), (3, "SOURCE_IP"), "the next good edit applied");

    let outcomes = outcomes.lock().unwrap().clone();
    let file = mounted.path(CONF).display().to_string();
    let [applied, syntax, invalid, recovered] = outcomes.as_slice() else {
        panic!("one outcome per change: {outcomes:#?}")
    };
    assert_eq!(applied, &Outcome::Applied { generation: 2, warnings: vec![] });
    let Outcome::Rejected { file: named, errors } = syntax else { panic!("{syntax:?}") };
    assert_eq!(named, &file);
    assert!(errors[0].starts_with(&format!("{file}: invalid cloud.conf syntax")), "{errors:?}");
    assert!(errors[0].contains("line 7"), "the line is named: {errors:?}");
    let Outcome::Rejected { errors, .. } = invalid else { panic!("{invalid:?}") };
    assert_eq!(
        errors,
        &["[Global] os-endpoint-type: \"sideways\" is not one of public, internal, admin"]
    );
    assert_eq!(recovered, &Outcome::Applied { generation: 3, warnings: vec![] });
}

#[tokio::test(start_paused = true)]
async fn a_comment_changes_nothing_and_a_file_written_in_two_steps_is_taken_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cloud.conf");
    std::fs::write(&path, GOOD).unwrap();
    let first = read(&path, &[], 1).unwrap();
    let (tx, current) = watch::channel(Arc::new(first));
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let seen = outcomes.clone();
    // The watch looks at start + n × POLL (its ticker's first tick is at once).
    let start = tokio::time::Instant::now();
    tokio::spawn(watch_file(path.clone(), Vec::new(), tx, move |o: &Outcome| {
        seen.lock().unwrap().push(o.clone());
    }));

    std::fs::write(&path, format!("# edited by hand\n{GOOD}")).unwrap();
    looks(2).await;
    assert_eq!(current.borrow().generation, 1, "same values: no new generation");

    // An edit written in pieces: one just before a look, another just before its confirming
    // read (each a config of its own), the whole after: only the whole is taken.
    let whole = GOOD.replace("ROUND_ROBIN", "LEAST_CONNECTIONS");
    let half = &whole[..whole.find("[LoadBalancer]").unwrap()];
    let more = format!("{half}[LoadBalancer]\n");
    assert!(read_text(&more).is_ok(), "the pieces alone would be applied");
    let look = start + POLL * 4;
    tokio::time::sleep_until(look - Duration::from_millis(10)).await;
    std::fs::write(&path, half).unwrap();
    tokio::time::sleep_until(look + SETTLE - Duration::from_millis(10)).await;
    std::fs::write(&path, &more).unwrap();
    tokio::time::sleep_until(look + SETTLE + Duration::from_millis(10)).await;
    std::fs::write(&path, &whole).unwrap();
    looks(3).await;
    assert_eq!(lb_method(&current.borrow()), "LEAST_CONNECTIONS");
    let outcomes = outcomes.lock().unwrap().clone();
    assert_eq!(outcomes, [Outcome::Applied { generation: 2, warnings: vec![] }]);
}

fn read_text(text: &str) -> Result<Settings, Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cloud.conf"), text).unwrap();
    read(&dir.path().join("cloud.conf"), &[], 1)
}

#[tokio::test(start_paused = true)]
async fn a_rewritten_clouds_yaml_is_a_new_generation_and_a_broken_one_is_kept_out() {
    let dir = tempfile::tempdir().unwrap();
    let clouds = dir.path().join("clouds.yaml");
    let write = |pw: &str| {
        let text = format!(
            "clouds:\n  openstack:\n    auth:\n      auth_url: http://k/v3\n      username: u\n      password: {pw}\n"
        );
        std::fs::write(&clouds, text).unwrap();
    };
    write("one");
    let conf = dir.path().join("cloud.conf");
    let text = format!("[Global]\nuse-clouds = true\nclouds-file = {}\n", clouds.display());
    std::fs::write(&conf, text).unwrap();
    let first = read(&conf, &[], 1).unwrap();
    let (tx, current) = watch::channel(Arc::new(first));
    tokio::spawn(watch_file(conf, Vec::new(), tx, |_: &Outcome| {}));
    let password = |s: &Settings| s.values().get("Global", "password").map(str::to_owned);

    std::fs::write(&clouds, "clouds: [broken").unwrap();
    looks(3).await;
    assert_eq!(password(&current.borrow()).as_deref(), Some("one"), "the last good kept");
    write("two");
    looks(2).await;
    let now = current.borrow().clone();
    assert_eq!((now.generation, password(&now).as_deref()), (2, Some("two")));
}

#[tokio::test(start_paused = true)]
async fn a_ca_file_rotated_in_place_is_a_new_generation() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\nold\n").unwrap();
    let conf = dir.path().join("cloud.conf");
    std::fs::write(&conf, format!("{GOOD}[Global]\nca-file = {}\n", ca.display())).unwrap();
    let first = read(&conf, &[], 1).unwrap();
    let (tx, current) = watch::channel(Arc::new(first));
    tokio::spawn(watch_file(conf, Vec::new(), tx, |_: &Outcome| {}));
    looks(2).await;
    assert_eq!(current.borrow().generation, 1);

    std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\nnew\n").unwrap();
    looks(2).await;
    assert_eq!(current.borrow().generation, 2, "the same values, another CA bundle");
}
