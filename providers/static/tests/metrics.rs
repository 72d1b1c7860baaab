//! `--metrics-file`: what one exec adds, that 40 concurrent execs count 40, that a real
//! Prometheus parser reads the file, and that a file that is not ours never fails a run.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kcp_kubelet::ApiVersion;
use kcp_testkit::metrics::{prometheus_parse, series, without_durations};
use kcp_testkit::{Plugin, TempDir};
use support::plugin;

const IMAGE: &str = "harbor.example.com/team/app";

fn with_metrics(dir: &TempDir) -> (Plugin, PathBuf) {
    let file = dir.path().join("credential-provider.prom");
    let p = plugin(dir).args([format!("--metrics-file={}", file.display())]);
    (p, file)
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn one_exec_adds_one_fetched_request_and_a_success_time() {
    let dir = TempDir::new("static-metrics");
    let (p, file) = with_metrics(&dir);
    let out = p.request(ApiVersion::V1, IMAGE);
    out.accepted();
    assert_eq!(out.stderr(), "", "metrics add nothing to stderr");
    // The static provider answers up front (no fetch to time) and has no token expiry.
    assert_eq!(
        series(&file),
        map(&[
            (
                r#"credential_provider_requests_total{provider="static",outcome="fetched"}"#,
                "1"
            ),
            (
                r#"credential_provider_last_success_timestamp_seconds{provider="static"}"#,
                "T"
            ),
        ])
    );
    // A refused request counts as an error of its class, and keeps the earlier counts.
    p.request(ApiVersion::V1, "evil.example.net/app").rejected();
    p.raw(b"not json").rejected();
    let after = series(&file);
    // The refused registry reached the provider's own check: one timed fetch.
    assert_eq!(
        after[r#"credential_provider_fetch_duration_seconds_count{provider="static"}"#],
        "1"
    );
    assert_eq!(
        without_durations(&after),
        map(&[
            (
                r#"credential_provider_requests_total{provider="static",outcome="error",class="other"}"#,
                "1"
            ),
            (
                r#"credential_provider_requests_total{provider="static",outcome="error",class="usage"}"#,
                "1"
            ),
            (
                r#"credential_provider_requests_total{provider="static",outcome="fetched"}"#,
                "1"
            ),
            (
                r#"credential_provider_last_success_timestamp_seconds{provider="static"}"#,
                "T"
            ),
        ])
    );
    // A Windows binary gives the file the token cache's access list instead (wine shows it as a
    // Unix mode of its own).
    #[cfg(unix)]
    if !kcp_testkit::windows_target() {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            mode, 0o644,
            "readable by an exporter running as another user"
        );
    }
}

#[test]
fn the_environment_variable_names_the_file_too_and_its_directory_is_created() {
    let dir = TempDir::new("static-metrics-env");
    let file = dir.path().join("textfile").join("m.prom");
    plugin(&dir)
        .env(
            "CREDENTIAL_PROVIDER_METRICS_FILE",
            file.display().to_string(),
        )
        .request(ApiVersion::V1, IMAGE)
        .accepted();
    assert_eq!(
        series(&file)[r#"credential_provider_requests_total{provider="static",outcome="fetched"}"#],
        "1"
    );
}

#[test]
fn forty_concurrent_execs_count_forty() {
    let dir = TempDir::new("static-metrics-herd");
    let (p, file) = with_metrics(&dir);
    let outcomes = kcp_testkit::cache::herd(&p, 40, IMAGE, None, &BTreeMap::new());
    for outcome in &outcomes {
        outcome.accepted();
    }
    assert_eq!(
        kcp_testkit::cache::herd_warnings(&outcomes),
        "",
        "no exec skipped its count"
    );
    assert_eq!(
        series(&file)[r#"credential_provider_requests_total{provider="static",outcome="fetched"}"#],
        "40"
    );
}

#[test]
fn a_prometheus_parser_reads_the_file() {
    let dir = TempDir::new("static-metrics-parse");
    let (p, file) = with_metrics(&dir);
    p.request(ApiVersion::V1, IMAGE).accepted();
    p.request(ApiVersion::V1, "evil.example.net/app").rejected();
    let Some(samples) = prometheus_parse(&file) else {
        return;
    };
    let families: std::collections::BTreeSet<String> = samples
        .iter()
        .map(|s| s.split(' ').take(2).collect::<Vec<_>>().join(" "))
        .collect();
    // prometheus_client names a counter family without its `_total`.
    assert_eq!(
        families.into_iter().collect::<Vec<_>>(),
        [
            "credential_provider_fetch_duration_seconds histogram",
            "credential_provider_last_success_timestamp_seconds gauge",
            "credential_provider_requests counter",
        ]
    );
    for expected in [
        "credential_provider_requests counter credential_provider_requests_total class=other,outcome=error,provider=static 1.0",
        "credential_provider_requests counter credential_provider_requests_total outcome=fetched,provider=static 1.0",
        "credential_provider_fetch_duration_seconds histogram credential_provider_fetch_duration_seconds_bucket le=+Inf,provider=static 1.0",
        "credential_provider_fetch_duration_seconds histogram credential_provider_fetch_duration_seconds_count provider=static 1.0",
    ] {
        assert!(
            samples.iter().any(|s| s == expected),
            "{expected}\n{samples:#?}"
        );
    }
}

/// Runs one exec against a metrics path someone else put there; it must answer, warn once, and
/// leave the path as it was.
fn answers_and_leaves_alone(dir: &TempDir, file: &Path, what: &str) {
    let p = plugin(dir).args([format!("--metrics-file={}", file.display())]);
    let out = p.request(ApiVersion::V1, IMAGE);
    out.accepted();
    let warnings: Vec<_> = out.stderr().lines().map(str::to_owned).collect();
    assert_eq!(warnings.len(), 1, "{what}: one warning: {warnings:#?}");
    assert!(
        warnings[0].contains(" WARN ") && warnings[0].contains("metrics file not updated"),
        "{what}: {warnings:#?}"
    );
}

#[test]
fn a_foreign_oversized_or_special_file_is_left_alone() {
    let dir = TempDir::new("static-metrics-foreign");
    let foreign = dir.path().join("foreign.prom");
    std::fs::write(&foreign, "node_custom_metric 1\n").unwrap();
    answers_and_leaves_alone(&dir, &foreign, "foreign");
    assert_eq!(
        std::fs::read_to_string(&foreign).unwrap(),
        "node_custom_metric 1\n"
    );

    let big = dir.path().join("big.prom");
    let text = format!("{}\n{}", kcp_plugin_marker(), "# padding\n".repeat(120_000));
    std::fs::write(&big, &text).unwrap();
    answers_and_leaves_alone(&dir, &big, "oversized");
    assert_eq!(std::fs::read_to_string(&big).unwrap(), text);

    #[cfg(unix)]
    {
        let target = dir.path().join("target.prom");
        std::fs::write(&target, "kept\n").unwrap();
        let link = dir.path().join("link.prom");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        answers_and_leaves_alone(&dir, &link, "symlink");
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept\n");

        let fifo = dir.path().join("fifo.prom");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        answers_and_leaves_alone(&dir, &fifo, "FIFO");
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(
            &std::fs::symlink_metadata(&fifo).unwrap().file_type()
        ));
    }
}

#[test]
fn a_damaged_file_of_ours_is_replaced() {
    if kcp_testkit::skip_on_windows(
        "a_damaged_file_of_ours_is_replaced",
        "a file written from the Linux side shows wine an access list open to Everyone, which a Windows binary rightly leaves alone",
    ) {
        return;
    }
    let dir = TempDir::new("static-metrics-damaged");
    let file = dir.path().join("m.prom");
    std::fs::write(
        &file,
        format!(
            "{}\ncredential_provider_requests_total{{provider=\"st",
            kcp_plugin_marker()
        ),
    )
    .unwrap();
    let p = plugin(&dir).args([format!("--metrics-file={}", file.display())]);
    let out = p.request(ApiVersion::V1, IMAGE);
    out.accepted();
    assert!(
        out.stderr().contains("metrics file is damaged") && out.stderr().lines().count() == 1,
        "{}",
        out.stderr()
    );
    assert_eq!(
        series(&file)[r#"credential_provider_requests_total{provider="static",outcome="fetched"}"#],
        "1"
    );
}

/// The first line every metrics file we write starts with.
fn kcp_plugin_marker() -> &'static str {
    kcp_plugin::metrics::MARKER
}
