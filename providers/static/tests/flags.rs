//! The command line (issue #25), through the shared table `kcp_testkit::flags`: unknown flags
//! refused before the request is read, every klog flag of the other providers' upstreams taken
//! in every Go spelling, booleans that never take the next word, one meaning for `-v 4`.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::TempDir;
use kcp_testkit::flags::{self, Refusal};
use support::plugin;

const IMAGE: &str = "harbor.example.com/team/app";

#[test]
fn unknown_flags_and_stray_words_are_refused_before_the_request() {
    let dir = TempDir::new("static-flags");
    let mut cases = flags::shared_refusals();
    cases.extend([
        Refusal::new(
            &["--usernam=x"],
            "unknown flag --usernam (did you mean --username?)",
        ),
        Refusal::new(
            &["--registy=x"],
            "unknown flag --registy (did you mean --registry?)",
        ),
        Refusal::new(&["--strict-host"], "unknown flag --strict-host"),
        Refusal::new(
            &["get-credentials", "strict-hosts"],
            "unexpected argument \"strict-hosts\": this provider takes no arguments but get-credentials",
        ),
    ]);
    flags::assert_refuses(&plugin(&dir), IMAGE, &cases);
}

#[test]
fn every_klog_flag_is_taken_in_every_spelling() {
    let dir = TempDir::new("static-klog");
    let all: Vec<_> = flags::KLOG_INIT_FLAGS
        .into_iter()
        .chain(flags::COMPONENT_BASE_FLAGS)
        .collect();
    let out = plugin(&dir)
        .args(flags::klog_spellings(&all))
        .request(ApiVersion::V1, IMAGE);
    out.accepted();
    assert_eq!(out.stderr(), "", "klog flags are taken silently");
}

#[test]
fn a_boolean_flag_never_takes_the_next_word() {
    let dir = TempDir::new("static-bool");
    let cache = dir.path().join("cache");
    plugin(&dir)
        .args([
            format!("--token-cache-dir={}", cache.display()),
            "--token-cache".to_owned(),
            "get-credentials".to_owned(),
        ])
        .request(ApiVersion::V1, IMAGE)
        .accepted();
}

#[test]
fn every_spelling_of_verbosity_4_is_the_same() {
    let dir = TempDir::new("static-v");
    flags::assert_verbosity_spellings(&plugin(&dir), IMAGE, Some("get-credentials"));
}
