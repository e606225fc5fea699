//! The soak's command line: `[--minutes M] [--services N] [--seed S] [--nodes K]
//! [--kube fake|real] [--kube-delay-max SECONDS]`, validated, no I/O.

use std::time::Duration;

/// Which API server the CCM and the soak talk to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kube {
    /// The wire-level fake API server, in this process.
    Fake,
    /// The real kube-apiserver of scripts/kube-up.sh (`CCM_KUBE_ENV`).
    Real,
}

#[derive(Debug, Clone)]
pub(crate) struct Args {
    pub(crate) minutes: f64,
    pub(crate) services: usize,
    pub(crate) seed: u64,
    pub(crate) nodes: usize,
    pub(crate) kube: Kube,
    /// The slow front delays every list and watch answer to the CCM by up to this much
    /// (0: not at all).
    pub(crate) kube_delay_max: Duration,
}

const USAGE: &str = "[--minutes M] [--services N] [--seed S] [--nodes K] [--kube fake|real] \
                     [--kube-delay-max SECONDS]";

/// The arguments after the program name (cargo bench adds `--bench`); panics with the usage.
pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Args {
    let mut a = Args {
        minutes: 30.0,
        services: 30,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64 % 1_000_000_007)
            .unwrap_or(1),
        nodes: 5,
        kube: Kube::Fake,
        kube_delay_max: Duration::from_secs(3),
    };
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut value =
            |name: &str| -> String { it.next().unwrap_or_else(|| panic!("{name} needs a value")) };
        match arg.as_str() {
            "--minutes" => a.minutes = value("--minutes").parse().expect("--minutes: a number"),
            "--services" => a.services = value("--services").parse().expect("--services: a count"),
            "--seed" => a.seed = value("--seed").parse().expect("--seed: a number"),
            "--nodes" => a.nodes = value("--nodes").parse().expect("--nodes: a count"),
            "--kube" => {
                a.kube = match value("--kube").as_str() {
                    "fake" => Kube::Fake,
                    "real" => Kube::Real,
                    other => panic!("--kube {other}: fake or real"),
                }
            }
            "--kube-delay-max" => {
                let seconds: f64 =
                    value("--kube-delay-max").parse().expect("--kube-delay-max: seconds");
                assert!((0.0..=60.0).contains(&seconds), "--kube-delay-max: 0 to 60 seconds");
                a.kube_delay_max = Duration::from_secs_f64(seconds);
            }
            "--bench" => {}
            other => panic!("unknown argument {other}: {USAGE}"),
        }
    }
    assert!(a.services >= 2 && a.nodes >= 3, "at least 2 Services and 3 nodes");
    assert!(a.minutes > 0.0, "--minutes: more than 0");
    a
}
