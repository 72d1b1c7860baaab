//! `HttpClient::pinned`: one host reached at fixed addresses, verified by name against its own
//! anchors only, never through a proxy (AKS identity bindings, `providers/acr/src/identity_bindings.rs`).
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::Duration;

use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{HttpClient, HttpError, Pin, Route};
use kcp_plugin::tls::TrustStore;
use kcp_testkit::fake::FakeResponse;
use kcp_testkit::sni::SniFakeServer;
use kcp_testkit::tls::TestCa;
use reqwest::{Method, Url};

const NAME: &str = "endpoint.cluster.test";

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

fn client(ca: &TestCa, server: &SniFakeServer) -> HttpClient {
    let (store, _) = TrustStore::load_from(Some(ca.ca_file().into()), None);
    HttpClient::pinned(
        Pin {
            host: NAME.into(),
            addrs: vec![server.addr()],
            trust: Arc::new(store),
        },
        Duration::from_secs(5),
        Duration::from_secs(5),
    )
}

fn get(client: &HttpClient, url: &str) -> Result<u16, HttpError> {
    block_on(client.fetch(
        Route::Internet,
        Method::GET,
        &Url::parse(url).unwrap(),
        &[],
        None,
        Deadline::after(Duration::from_secs(10)),
    ))
    .map(|answer| answer.status)
}

#[test]
fn connects_to_the_pinned_address_with_the_name_as_sni() {
    let ca = TestCa::new();
    let server = SniFakeServer::start(&ca, &[NAME], |_| FakeResponse::json("{}"));
    assert_eq!(
        get(&client(&ca, &server), &format!("https://{NAME}/")).unwrap(),
        200
    );
    assert_eq!(server.server_names(), vec![Some(NAME.to_owned())]);
    let requests = server.requests();
    assert_eq!(requests[0].header("host"), Some(NAME));
    assert_eq!(requests[0].target, "/");
}

#[test]
fn trusts_only_its_own_anchors() {
    let ca = TestCa::new();
    let server = SniFakeServer::start(&ca, &[NAME], |_| FakeResponse::json("{}"));
    let other = TestCa::new();
    let e = get(&client(&other, &server), &format!("https://{NAME}/")).unwrap_err();
    assert!(matches!(e, HttpError::Tls { .. }), "{e}");
    assert!(server.requests().is_empty());
}

#[test]
fn refuses_any_other_host_or_plain_http_before_connecting() {
    let ca = TestCa::new();
    let server = SniFakeServer::start(&ca, &[NAME], |_| FakeResponse::json("{}"));
    let client = client(&ca, &server);
    for url in ["https://other.cluster.test/", &format!("http://{NAME}/")] {
        let e = get(&client, url).unwrap_err();
        assert!(
            e.to_string()
                .contains("this client only calls https://endpoint.cluster.test"),
            "{url}: {e}"
        );
    }
    assert!(server.server_names().is_empty() && server.requests().is_empty());
}
