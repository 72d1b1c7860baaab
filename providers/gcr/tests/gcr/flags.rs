//! The command line (issue #25), through the shared table `kcp_testkit::flags`: unknown flags
//! refused before the request is read and before the metadata server hears anything; every flag
//! of `klog.InitFlags` (upstream merges them all) taken in every Go spelling; booleans never take
//! the next word; one meaning for `-v 4`.

use kcp_kubelet::ApiVersion;
use kcp_testkit::flags::{self, Refusal};

use crate::support::*;

const IMAGE: &str = "gcr.io/my-project/app";

#[test]
fn unknown_flags_are_refused_and_nothing_is_sent() {
    let md = node_metadata(r#","expires_in":3599"#);
    let mut cases = flags::shared_refusals();
    cases.extend([
        Refusal::new(
            &["--strict-host"],
            "unknown flag --strict-host (did you mean --strict-hosts?)",
        ),
        Refusal::new(
            &["--authflow=dockercfg"],
            "unknown flag --authflow (did you mean --authFlow?)",
        ),
        Refusal::new(
            &["--log-dir=/tmp"],
            "unknown flag --log-dir (did you mean --log_dir?)",
        ),
        Refusal::new(
            &["--registy-mirror=x"],
            "unknown flag --registy-mirror",
        ),
        Refusal::new(
            &["get-credentials", "gcr"],
            "unexpected argument \"gcr\": this provider takes no arguments but get-credentials",
        ),
        Refusal::new(
            &["--strict-hosts", "true"],
            "unexpected argument \"true\" after --strict-hosts: a boolean flag takes its value as --strict-hosts=true",
        ),
        // component-base's flush flag is the ACR upstream's, not klog's.
        Refusal::new(
            &["--log-flush-frequency=5s"],
            "unknown flag --log-flush-frequency (upstream's gcr-credential-provider does not take this klog flag either)",
        ),
    ]);
    flags::assert_refuses(&plugin_with_metadata(&md), IMAGE, &cases);
    assert_eq!(
        md.requests().len(),
        0,
        "nothing reached the metadata server"
    );
}

#[test]
fn every_klog_flag_is_taken_in_every_spelling() {
    let md = node_metadata(r#","expires_in":3599"#);
    let out = plugin_with_metadata(&md)
        .args(flags::klog_spellings(&flags::KLOG_INIT_FLAGS))
        .request(ApiVersion::V1, IMAGE);
    out.accepted();
    assert_eq!(out.stderr(), "", "klog flags are taken silently");
}

#[test]
fn a_boolean_flag_never_takes_the_next_word() {
    let md = node_metadata(r#","expires_in":3599"#);
    let p = plugin_with_metadata(&md).args(["--strict-hosts", "get-credentials"]);
    p.request(ApiVersion::V1, IMAGE).accepted();
    // ... and strict mode is on.
    let line = p.request(ApiVersion::V1, "quay.io/team/app").rejected();
    assert!(line.contains("quay.io"), "{line}");
    assert_eq!(
        md.requests().len(),
        1,
        "strict mode fetched nothing for quay.io"
    );
}

#[test]
fn every_spelling_of_verbosity_4_is_the_same() {
    let md = node_metadata(r#","expires_in":3599"#);
    flags::assert_verbosity_spellings(&plugin_with_metadata(&md), IMAGE, Some("get-credentials"));
}
