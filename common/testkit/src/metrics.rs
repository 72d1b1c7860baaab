//! Reading the metrics file (`--metrics-file`) a plugin wrote: its series as a map for exact
//! assertions, and its text checked by a real Prometheus parser (Python's `prometheus_client`,
//! from the venv `scripts/setup-venv` builds).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The series of a metrics file, `name{labels}` → value, comments left out. The last-success
/// times are replaced by `T` (they are the clock's), so whole maps compare exactly.
pub fn series(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reading the metrics file {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (key, value) = l.rsplit_once(' ').expect("a sample line has a value");
            let value = if key.starts_with("credential_provider_last_success_timestamp_seconds") {
                assert!(value.parse::<u64>().is_ok(), "{l}");
                "T"
            } else {
                value
            };
            (key.to_owned(), value.to_owned())
        })
        .collect()
}

/// `series` without the fetch-duration histogram, whose buckets depend on how long a fetch took.
pub fn without_durations(series: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    series
        .iter()
        .filter(|(k, _)| !k.starts_with("credential_provider_fetch_duration_seconds"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The file at `path` as `prometheus_client.parser.text_string_to_metric_families` reads it: one
/// line per sample, `family type name labels value`, labels as sorted `k=v` joined by `,`.
/// `None` when Python or `prometheus_client` is missing ([`crate::skip::missing`] recorded it;
/// under `KCP_REQUIRE_ALL=1` that fails the test instead).
pub fn prometheus_parse(path: &Path) -> Option<Vec<String>> {
    const HOW: &str = "run scripts/setup-venv and put .venv/bin on PATH (scripts/test does both)";
    const SCRIPT: &str = r#"
import sys
try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit(3)
text = open(sys.argv[1]).read()
for family in text_string_to_metric_families(text):
    for s in family.samples:
        labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
        print(family.name, family.type, s.name, labels, repr(float(s.value)))
"#;
    let output = match Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(path)
        .output()
    {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::skip::missing("python3", HOW);
            return None;
        }
        Err(e) => panic!("running python3 failed: {e}"),
    };
    if output.status.code() == Some(3) {
        crate::skip::missing("prometheus_client (Python)", HOW);
        return None;
    }
    assert!(
        output.status.success(),
        "prometheus_client refused {}: {}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    Some(
        String::from_utf8(output.stdout)
            .expect("UTF-8")
            .lines()
            .map(str::to_owned)
            .collect(),
    )
}

/// Asserts what a provider's fetch followed by a token-cache hit wrote to `path`: one `fetched`
/// and one `cache_hit` request, one timed fetch, a last success and no error; returns the token
/// expiry shown for `registry`.
pub fn assert_fetch_then_cache_hit(path: &Path, provider: &str, registry: &str) -> u64 {
    let after = series(path);
    let p = format!(r#"provider="{provider}""#);
    for (key, value) in [
        (
            format!(r#"credential_provider_requests_total{{{p},outcome="fetched"}}"#),
            "1",
        ),
        (
            format!(r#"credential_provider_requests_total{{{p},outcome="cache_hit"}}"#),
            "1",
        ),
        (
            format!("credential_provider_fetch_duration_seconds_count{{{p}}}"),
            "1",
        ),
        (
            format!("credential_provider_last_success_timestamp_seconds{{{p}}}"),
            "T",
        ),
    ] {
        assert_eq!(
            after.get(&key).map(String::as_str),
            Some(value),
            "{key}: {after:#?}"
        );
    }
    assert!(!after.keys().any(|k| k.contains("error")), "{after:#?}");
    let expiry = format!(
        r#"credential_provider_token_expiry_timestamp_seconds{{{p},registry="{registry}"}}"#
    );
    after
        .get(&expiry)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {expiry}: {after:#?}"))
}
