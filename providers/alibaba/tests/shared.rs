//! The suites every provider runs (`kcp_testkit`): the bad-input table, the token-endpoint fault
//! table, the command-line table, the metrics file; and the token cache: a second run answers
//! from it with no request at all, key-only mode prints the key without any network, and the
//! `matchImages` globs of the documentation cover every host form.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::sync::Arc;

use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::FakeResponse;
use kcp_testkit::faults::{self, Arranged, Fault, FaultTarget, Plan, Step};
use kcp_testkit::flags::{self, Refusal};
use kcp_testkit::{TempDir, bad_input, http_date, unix_now};
use support::*;

#[test]
fn refuses_the_shared_bad_input_table() {
    let fakes = Fakes::new().personal();
    let p = with_static_key(at_fakes(&fakes));
    bad_input::assert_rejects_all(&p, &image(PERSONAL_HOST));
    assert_eq!(
        fakes.cr.requests().len(),
        1,
        "only the control request reached cr"
    );
}

/// The fault table against the Personal Edition's token call, with static keys (so the token
/// call is the only request).
struct Alibaba;

const FAULT_PASSWORD: &str = "fault-table-password-Nm3Bq8";

fn fault_answer(step: Step) -> FakeResponse {
    match step {
        Step::ServerError => api_error(500, "InternalError", "internal error"),
        Step::Unavailable => api_error(503, "ServiceUnavailable", "unavailable"),
        Step::Throttled => api_error(
            400,
            "Throttling.User",
            "Request was denied due to user flow control.",
        ),
        Step::Reset => FakeResponse::drop_connection(),
        Step::Malformed => FakeResponse::json("<html>not json</html>"),
        Step::Hang => FakeResponse::hang(),
        Step::Token { life, skew } => {
            let server_now = Step::server_now(skew);
            personal_token(FAULT_PASSWORD, (server_now + life) * 1000)
                .header("date", &http_date(u64::try_from(server_now).unwrap()))
        }
    }
}

impl FaultTarget for Alibaba {
    fn arrange(&self, plan: &Plan) -> Arranged {
        kcp_testkit::secrets::register(FAULT_PASSWORD);
        let fakes = Fakes::new();
        match plan {
            Plan::Refused => Arranged {
                plugin: with_static_key(base().args([
                    "get-credentials".to_owned(),
                    format!("--metadata-endpoint={}", fakes.metadata.url()),
                    format!("--cr-endpoint=http://127.0.0.1:{}", closed_port()),
                ])),
                image: image(PERSONAL_HOST),
                token_requests: Box::new(Vec::new),
                keep: Box::new(fakes),
            },
            Plan::Script(steps) => {
                fakes.cr.on(
                    "GetAuthorizationToken",
                    steps.iter().map(|s| fault_answer(*s)).collect(),
                );
                let fakes = Arc::new(fakes);
                let seen = fakes.clone();
                Arranged {
                    plugin: with_static_key(base().args([
                        "get-credentials".to_owned(),
                        format!("--metadata-endpoint={}", fakes.metadata.url()),
                        format!("--cr-endpoint={}", fakes.cr.url()),
                    ])),
                    image: image(PERSONAL_HOST),
                    token_requests: Box::new(move || seen.cr.requests()),
                    keep: Box::new(fakes),
                }
            }
        }
    }

    /// The expiry is absolute (`expireDate`, server clock), counted from the later of the two
    /// clocks (the answer's `Date`), minus the 5 min margin.
    fn cache_duration(&self, life: i64, skew: i64) -> i64 {
        life.min(life + skew) - 300
    }

    /// The API client's retry rules.
    fn attempts(&self) -> usize {
        4
    }
}

#[test]
fn the_shared_fault_table_against_the_registry_token_call() {
    let mut failed = Vec::new();
    let mut outcomes = Vec::new();
    for fault in Fault::ALL {
        match std::panic::catch_unwind(|| faults::run_one(&Alibaba, fault)) {
            Ok(out) => outcomes.push((fault, out)),
            Err(_) => failed.push(fault),
        }
    }
    assert!(
        failed.is_empty(),
        "faults whose contract failed (see above): {failed:?}"
    );
    for (fault, out) in outcomes {
        let stderr = out.stderr();
        match fault {
            Fault::Refused
            | Fault::Hang
            | Fault::MalformedBody
            | Fault::ServerErrorPersists
            | Fault::UnavailablePersists
            | Fault::ThrottledPersists
            | Fault::ResetPersists => {
                assert!(
                    !stderr.contains("<html>"),
                    "bodies are not echoed: {stderr}"
                );
            }
            _ => {
                let ok = out.accepted();
                assert!(
                    ok.auth
                        .values()
                        .all(|(u, p)| u == CR_USER && p == FAULT_PASSWORD),
                    "{fault:?}"
                );
            }
        }
        if matches!(
            fault,
            Fault::Refused | Fault::MalformedBody | Fault::ServerErrorPersists
        ) {
            assert!(
                stderr.contains("GetAuthorizationToken"),
                "{fault:?}: {stderr}"
            );
        }
    }
}

#[test]
fn unknown_flags_and_stray_words_are_refused_before_the_request() {
    let fakes = Fakes::new();
    let mut cases = flags::shared_refusals();
    cases.extend([
        Refusal::new(&["--instances=a.example.com=cri-a"], "unknown flag --instances (did you mean --instance?)"),
        Refusal::new(&["--oidc-provider=x"], "unknown flag --oidc-provider (did you mean --oidc-provider-arn?)"),
        Refusal::new(&["--cr-endpoints=x"], "unknown flag --cr-endpoints (did you mean --cr-endpoint?)"),
        Refusal::new(
            &["get-credentials", "cn-hangzhou"],
            "unexpected argument \"cn-hangzhou\": this provider takes no arguments but get-credentials",
        ),
    ]);
    flags::assert_refuses(&plugin(&fakes), &image(ENTERPRISE_HOST), &cases);
    assert_eq!(fakes.total_requests(), 0);
}

#[test]
fn every_klog_flag_is_taken_in_every_spelling() {
    let fakes = Fakes::new();
    let all: Vec<_> = flags::KLOG_INIT_FLAGS
        .into_iter()
        .chain(flags::COMPONENT_BASE_FLAGS)
        .collect();
    let out = request_enterprise(&plugin(&fakes).args(flags::klog_spellings(&all)));
    out.accepted();
    assert_eq!(out.stderr(), "", "klog flags are taken silently");
}

#[test]
fn every_spelling_of_verbosity_4_is_the_same() {
    let fakes = Fakes::new();
    flags::assert_verbosity_spellings(
        &plugin(&fakes),
        &image(ENTERPRISE_HOST),
        Some("get-credentials"),
    );
}

#[test]
fn metrics_count_a_fetch_then_a_cache_hit() {
    let fakes = Fakes::new().personal();
    let dir = TempDir::new("alibaba-metrics");
    let file = dir.path().join("m.prom");
    let p = plugin(&fakes).args([
        format!("--token-cache-dir={}", dir.path().join("cache").display()),
        format!("--metrics-file={}", file.display()),
    ]);
    let before = unix_now();
    p.request(ApiVersion::V1, &image(PERSONAL_HOST)).accepted();
    p.request(ApiVersion::V1, &image(PERSONAL_HOST)).accepted();
    let expiry = kcp_testkit::metrics::assert_fetch_then_cache_hit(&file, "alibaba", PERSONAL_HOST);
    assert!(
        (before + 3600..=unix_now() + 3600).contains(&expiry),
        "{expiry}"
    );
}

#[test]
fn a_second_run_answers_from_the_token_cache_with_no_request() {
    let dir = TempDir::new("alibaba-cache");
    let cache = dir.path().join("cache");
    for (fakes, p, host, password) in [
        {
            let f = Fakes::new().personal();
            let p = plugin(&f);
            (f, p, PERSONAL_HOST, PERSONAL_PASSWORD)
        },
        {
            let f = Fakes::new();
            let p = static_plugin(&f);
            (f, p, ENTERPRISE_HOST, ENTERPRISE_PASSWORD)
        },
    ] {
        let p = with_cache(p, &cache);
        let first = p.request(ApiVersion::V1, &image(host));
        assert_answer(&first, ApiVersion::V1, host, password, ONE_HOUR_ANSWER);
        let seen = fakes.total_requests();
        for version in [ApiVersion::V1, ApiVersion::V1beta1, ApiVersion::V1alpha1] {
            let again = p.request(version, &image(host));
            assert_answer(&again, version, host, password, ONE_HOUR_ANSWER);
        }
        assert_eq!(
            fakes.total_requests(),
            seen,
            "{host}: answered from the cache"
        );
    }
    // One entry per login (and the instance map of the Enterprise host beside them).
    let entries = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.len() == 37 && n.ends_with(".json"))
        .count();
    assert_eq!(entries, 2);
}

#[test]
fn a_pods_role_is_cached_per_service_account() {
    let dir = TempDir::new("alibaba-cache-rrsa");
    let cache = dir.path().join("cache");
    let fakes = Fakes::new();
    let p = with_cache(rrsa_plugin(&fakes), &cache);
    let ask = |token: &str, role: &str| pod_request(&p, ENTERPRISE_HOST, token, Some(role));
    let a = sa_token();
    ask(&a, POD_ROLE).accepted();
    assert_eq!(fakes.sts.requests().len(), 1);
    // Another token of the same service account: from the cache.
    let a2 = sa_token_of("team-a", "app", "uid-1", "pod-2");
    ask(&a2, POD_ROLE).accepted();
    assert_eq!(fakes.sts.requests().len(), 1);
    // Another service account, or another role: a new exchange.
    let b = sa_token_of("team-b", "app", "uid-2", "pod-3");
    ask(&b, POD_ROLE).accepted();
    ask(&a, "other-role").accepted();
    assert_eq!(fakes.sts.requests().len(), 3);
}

#[test]
fn key_only_mode_prints_the_key_without_network() {
    let dir = TempDir::new("alibaba-key-only");
    let cache = dir.path().join("cache");
    let fakes = Fakes::new().personal();
    let p = with_cache(plugin(&fakes), &cache);
    let keyed = p
        .clone()
        .env("CREDENTIAL_PROVIDER_PRINT_CACHE_KEY", "true")
        .request(ApiVersion::V1, &image(PERSONAL_HOST));
    assert_eq!(keyed.exec.exit_code, Some(0), "{}", keyed.stderr());
    assert_eq!(fakes.total_requests(), 0, "no network in key-only mode");
    let line: serde_json::Value = serde_json::from_str(&keyed.stdout()).unwrap();
    assert_eq!(line["kind"], "TokenCacheKey");
    let key = line["key"].as_str().unwrap();
    assert!(
        key.starts_with("provider=alibaba;edition=personal;region=cn-hangzhou"),
        "{key}"
    );
    assert!(
        !key.contains(NODE_KEY.key_id),
        "identity parts are hashed: {key}"
    );
    // The file it names is the one a real run writes.
    p.request(ApiVersion::V1, &image(PERSONAL_HOST)).accepted();
    assert!(cache.join(line["file"].as_str().unwrap()).is_file());
    // A legacy and a crpi host of one region share the login.
    let crpi = p
        .clone()
        .env("CREDENTIAL_PROVIDER_PRINT_CACHE_KEY", "true")
        .request(ApiVersion::V1, &image(CRPI_HOST));
    assert_eq!(crpi.stdout(), keyed.stdout());
    // Static keys and a pod's role: other keys.
    let stat = with_cache(
        static_plugin(&fakes).env("CREDENTIAL_PROVIDER_PRINT_CACHE_KEY", "true"),
        &cache,
    )
    .request(ApiVersion::V1, &image(PERSONAL_HOST));
    assert_ne!(stat.stdout(), keyed.stdout());
}

#[test]
fn fleet_mode_shares_the_nodes_entries_but_never_a_pods() {
    let dir = TempDir::new("alibaba-fleet");
    let cache = dir.path().join("cache");
    let fakes = Fakes::new().personal();
    let key_of = |p: kcp_testkit::Plugin, token: Option<&str>| {
        let mut annotations = std::collections::BTreeMap::new();
        if token.is_some() {
            annotations = role_annotation(POD_ROLE);
        }
        let out = with_cache(p.env("CREDENTIAL_PROVIDER_PRINT_CACHE_KEY", "true"), &cache)
            .args(["--token-cache-shared-identity=pool-a"])
            .request_with_token(ApiVersion::V1, &image(PERSONAL_HOST), token, &annotations);
        assert_eq!(out.exec.exit_code, Some(0), "{}", out.stderr());
        out.stdout()
    };
    // The node role and static keys: the shared identity stands in for them, one key.
    let node = key_of(plugin(&fakes), None);
    let other_role = key_of(
        plugin(&fakes).env("ALIBABA_CLOUD_ECS_METADATA", "another-role"),
        None,
    );
    let stat = key_of(static_plugin(&fakes), None);
    assert!(node.contains("pool-a"), "{node}");
    assert_eq!(node, other_role);
    assert_eq!(node, stat);
    // A pod's role: its own key, never the shared one.
    let pod = key_of(rrsa_plugin(&fakes), Some(&sa_token()));
    assert!(!pod.contains("pool-a"), "{pod}");
    assert_eq!(fakes.total_requests(), 0);
}

/// The `matchImages` globs of docs/providers/alibaba.md and the kubelet's one-label-per-`*`
/// matching (as `support::kubelet_matches` writes it out): each host form is covered by exactly
/// one glob; look-alikes with more or fewer labels by none.
#[test]
fn the_documented_match_images_cover_every_host_form() {
    const GLOBS: [&str; 3] = [
        "registry*.*.aliyuncs.com",
        "*-registry*.*.cr.aliyuncs.com",
        "crpi-*.*.personal.cr.aliyuncs.com",
    ];
    let table: &[(&str, Option<&str>)] = &[
        (
            "registry.cn-hangzhou.aliyuncs.com",
            Some("registry*.*.aliyuncs.com"),
        ),
        (
            "registry-vpc.cn-hangzhou.aliyuncs.com",
            Some("registry*.*.aliyuncs.com"),
        ),
        (
            "registry-intl.ap-southeast-1.aliyuncs.com",
            Some("registry*.*.aliyuncs.com"),
        ),
        (
            "registry-intl-vpc.eu-central-1.aliyuncs.com",
            Some("registry*.*.aliyuncs.com"),
        ),
        (
            "myinst-registry.cn-hangzhou.cr.aliyuncs.com",
            Some("*-registry*.*.cr.aliyuncs.com"),
        ),
        (
            "myinst-registry-vpc.cn-hangzhou.cr.aliyuncs.com",
            Some("*-registry*.*.cr.aliyuncs.com"),
        ),
        (
            "crpi-k3x9q2.cn-hangzhou.personal.cr.aliyuncs.com",
            Some("crpi-*.*.personal.cr.aliyuncs.com"),
        ),
        (
            "crpi-k3x9q2-vpc.cn-hangzhou.personal.cr.aliyuncs.com",
            Some("crpi-*.*.personal.cr.aliyuncs.com"),
        ),
        ("registry.cn-hangzhou.aliyuncs.com.evil.test", None),
        // Alibaba's other services: the provider is not even run for them.
        ("ecs.cn-hangzhou.aliyuncs.com", None),
        ("oss-cn-hangzhou.aliyuncs.com", None),
        ("cr.cn-hangzhou.aliyuncs.com", None),
        ("sts.cn-hangzhou.aliyuncs.com", None),
        ("a.b.c.d.e.f.g.aliyuncs.com", None),
        ("evil.test", None),
    ];
    for (host, want) in table {
        let img = image(host);
        let matched: Vec<&str> = GLOBS
            .iter()
            .copied()
            .filter(|g| kubelet_matches(g, &img))
            .collect();
        assert_eq!(matched, want.iter().copied().collect::<Vec<_>>(), "{host}");
        // The kubelet's own matcher agrees.
        let lib: Vec<&str> = kcp_kubelet::matching::keyring_lookup(&GLOBS, &img);
        assert_eq!(lib, matched, "{host}");
    }
}

/// The kubelet's `URLsMatch(glob, image)` (docs/kubelet-contract.md, "Matching"): the same
/// number of host labels, each matched as a glob (`*` within one label), equal ports, the key's
/// path a prefix of the image's. Written from the kubelet's rules so that the test does not
/// lean on the code under test.
fn kubelet_matches(key: &str, image: &str) -> bool {
    fn glob(pattern: &str, text: &str) -> bool {
        match pattern.split_once('*') {
            None => pattern == text,
            Some((prefix, rest)) => {
                text.starts_with(prefix)
                    && (prefix.len()..=text.len()).any(|i| glob(rest, &text[i..]))
            }
        }
    }
    let host = |s: &str| s.split('/').next().unwrap_or("").to_owned();
    let (kh, ih) = (host(key), host(image));
    let kl: Vec<&str> = kh.split('.').collect();
    let il: Vec<&str> = ih.split('.').collect();
    kl.len() == il.len() && kl.iter().zip(&il).all(|(k, i)| glob(k, i))
}
