//! `/healthz` (the process answers), `/readyz` (503 naming each controller whose last pass
//! failed) and `/metrics` (Prometheus text), on plain HTTP at `--health-addr`.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::watch;

use super::controllers::{Outcome, Step};
use super::status::{Controller, State};

/// Counters of what the operator did.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Passes per controller and result (`done`, `waiting`, `failed`).
    passes: [[AtomicU64; 3]; 3],
    /// ClusterOperator status writes.
    status_writes: AtomicU64,
}

impl Metrics {
    /// Counts one pass.
    pub fn pass(&self, controller: Controller, outcome: &Outcome) {
        let result = match outcome {
            Ok(Step::Done) => 0,
            Ok(Step::Waiting(_)) => 1,
            Err(_) => 2,
        };
        self.passes[controller as usize][result].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one status write.
    pub fn status_write(&self) {
        self.status_writes.fetch_add(1, Ordering::Relaxed);
    }

    fn text(&self, state: &State) -> String {
        let mut out = String::from(
            "# HELP ccm_operator_passes_total Reconcile passes by controller and result.\n\
             # TYPE ccm_operator_passes_total counter\n",
        );
        for controller in Controller::ALL {
            for (index, result) in ["done", "waiting", "failed"].iter().enumerate() {
                let count = self.passes[controller as usize][index].load(Ordering::Relaxed);
                out.push_str(&format!(
                    "ccm_operator_passes_total{{controller=\"{}\",result=\"{result}\"}} {count}\n",
                    controller.name()
                ));
            }
        }
        out.push_str(
            "# HELP ccm_operator_status_writes_total Writes of the ClusterOperator status.\n\
             # TYPE ccm_operator_status_writes_total counter\n",
        );
        out.push_str(&format!(
            "ccm_operator_status_writes_total {}\n",
            self.status_writes.load(Ordering::Relaxed)
        ));
        out.push_str(
            "# HELP ccm_operator_failing Whether the controller's last pass failed.\n\
             # TYPE ccm_operator_failing gauge\n",
        );
        for controller in Controller::ALL {
            let failing = state.records[controller as usize].last_failure().is_some();
            out.push_str(&format!(
                "ccm_operator_failing{{controller=\"{}\"}} {}\n",
                controller.name(),
                u8::from(failing)
            ));
        }
        out
    }
}

/// The answer to one request.
fn answer(path: &str, state: &State, metrics: &Metrics) -> (StatusCode, String) {
    match path {
        "/healthz" => (StatusCode::OK, "ok\n".to_owned()),
        "/readyz" => {
            let failing: Vec<String> = Controller::ALL
                .into_iter()
                .filter_map(|c| {
                    let failure = state.records[c as usize].last_failure()?;
                    Some(format!("{}: {}: {}", c.name(), failure.reason, failure.message))
                })
                .collect();
            match failing.is_empty() {
                true => (StatusCode::OK, "ok\n".to_owned()),
                false => (StatusCode::SERVICE_UNAVAILABLE, failing.join("\n") + "\n"),
            }
        }
        "/metrics" => (StatusCode::OK, metrics.text(state)),
        _ => (StatusCode::NOT_FOUND, "not found\n".to_owned()),
    }
}

/// Serves until aborted.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: watch::Receiver<State>,
    metrics: Arc<Metrics>,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (state, metrics) = (state.clone(), metrics.clone());
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                let (code, body) = answer(request.uri().path(), &state.borrow(), &metrics);
                let response = Response::builder()
                    .status(code)
                    .header("content-type", "text/plain; charset=utf-8")
                    .body(Full::new(Bytes::from(body)))
                    .expect("a valid response");
                async move { Ok::<_, Infallible>(response) }
            });
            let connection = hyper::server::conn::http1::Builder::new();
            if let Err(error) = connection.serve_connection(TokioIo::new(stream), service).await {
                tracing::debug!(%error, "health connection ended");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::operator::status::Failure;

    #[test]
    fn readyz_names_each_failing_controller_with_its_error() {
        let mut state = State::default();
        let metrics = Metrics::default();
        assert_eq!(answer("/readyz", &state, &metrics).0, StatusCode::OK);
        let failure = Failure {
            reason: "CloudConfigInvalid".into(),
            message: "[Global] secret-name: non-default".into(),
            terminal: true,
        };
        state.records[0].attempt(Err(failure), Instant::now());
        let (code, body) = answer("/readyz", &state, &metrics);
        assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body,
            "CloudConfigController: CloudConfigInvalid: [Global] secret-name: non-default\n"
        );
        assert!(
            answer("/metrics", &state, &metrics)
                .1
                .contains("ccm_operator_failing{controller=\"CloudConfigController\"} 1\n")
        );
    }
}
