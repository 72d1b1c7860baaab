//! The command line (issue #25), through the shared table `kcp_testkit::flags`: unknown flags
//! refused before the request is read and before Entra or the registry hear anything; the klog
//! flags of upstream's `logs.AddFlags` (`--vmodule`, `--log-flush-frequency`) taken in every Go
//! spelling and the others refused, as upstream does; booleans never take the next word (so the
//! config file after `--service-principal-passthrough` stays the config file); one meaning for
//! `-v 4`.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::Plugin;
use kcp_testkit::flags::{self, Refusal};
use support::*;

const SP_CONFIG: &str = r#"{"tenantId":"tenant-1","aadClientId":"sp-client-id","aadClientSecret":"sp-client-secret-Yy93"}"#;
const IMAGE: &str = "myreg.azurecr.io/app";

fn assert_nothing_sent(world: &World) {
    assert!(world.entra.requests().is_empty(), "nothing reached Entra");
    assert!(
        world.registry.requests().is_empty(),
        "nothing reached the registry"
    );
}

#[test]
fn unknown_flags_are_refused_and_nothing_is_sent() {
    let world = World::new();
    let mut cases = flags::shared_refusals();
    cases.extend([
        Refusal::new(
            &["--registy-mirror=mcr.microsoft.com:myreg.azurecr.io"],
            "unknown flag --registy-mirror (did you mean --registry-mirror?)",
        ),
        Refusal::new(
            &["--service-principal-passthru"],
            "unknown flag --service-principal-passthru (did you mean --service-principal-passthrough?)",
        ),
        Refusal::new(
            &["--ib-sni", "x"],
            "unknown flag --ib-sni (did you mean --ib-sni-name?)",
        ),
        Refusal::new(
            &["--strict-hosts"],
            "unknown flag --strict-hosts",
        ),
        Refusal::new(
            &["get-credentials"],
            "expected exactly one argument (config file); got arguments: [",
        ),
    ]);
    // The last case's line names the config file's temporary path: match up to it.
    let (exact, prefix) = cases.split_at(cases.len() - 1);
    let plugin = world.plugin(SP_CONFIG);
    flags::assert_refuses(&plugin, IMAGE, exact);
    let line = plugin
        .clone()
        .args(prefix[0].args.iter().cloned())
        .request(ApiVersion::V1, IMAGE)
        .rejected();
    assert!(line.contains(&prefix[0].message), "{line}");
    assert!(
        line.ends_with(", \"get-credentials\"] (see --help)"),
        "{line}"
    );
    assert_nothing_sent(&world);
}

#[test]
fn upstreams_klog_flags_are_taken_in_every_spelling_and_no_others() {
    let world = World::new();
    let out = world
        .plugin(SP_CONFIG)
        .args(flags::klog_spellings(&flags::COMPONENT_BASE_FLAGS))
        .request(ApiVersion::V1, IMAGE);
    out.accepted();
    assert_eq!(out.stderr(), "", "klog flags are taken silently");
    let world = World::new();
    let others: Vec<&str> = flags::KLOG_INIT_FLAGS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| *name != "vmodule")
        .collect();
    flags::assert_refuses(
        &world.plugin(SP_CONFIG),
        IMAGE,
        &flags::klog_refusals("acr-credential-provider", &others),
    );
    assert_nothing_sent(&world);
}

#[test]
fn a_boolean_flag_never_takes_the_config_file() {
    let world = World::new();
    let config = world.config(SP_CONFIG);
    let ok = Plugin::new(BIN)
        .args(["--service-principal-passthrough", &config])
        .request(ApiVersion::V1, IMAGE)
        .accepted();
    assert_eq!(
        ok.auth["*.azurecr.io"],
        (
            "sp-client-id".to_owned(),
            "sp-client-secret-Yy93".to_owned()
        )
    );
}

#[test]
fn every_spelling_of_verbosity_4_is_the_same() {
    let world = World::new();
    flags::assert_verbosity_spellings(&world.plugin(SP_CONFIG), IMAGE, None);
}
