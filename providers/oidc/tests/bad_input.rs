//! The shared bad-input table (`kcp_testkit::bad_input`) against a token-exchange entry: every
//! case refused cleanly, and only the control request reaches the token endpoint.

// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_testkit::bad_input;
use kcp_testkit::fake::FakeResponse;
use support::*;

#[test]
fn refuses_the_shared_bad_input_table() {
    let fake = token_endpoint(FakeResponse::json(
        r#"{"access_token":"bad-input-control-token-0123","expires_in":600}"#,
    ));
    let (p, _dir) = plugin(&exchange_config(&fake, ""));
    bad_input::assert_rejects_all(
        &p.service_account_token(sa_token()),
        "registry.acme.test/team/app",
    );
    assert_eq!(
        fake.requests().len(),
        1,
        "only the control request was exchanged"
    );
}
