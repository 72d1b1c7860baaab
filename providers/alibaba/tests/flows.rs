//! Every way the provider answers, against loopback fakes of the metadata server, STS and
//! Container Registry that check each request exactly (method, path, action and version, every
//! `x-acs-*` header, the V3 signature with the secret the fake handed out, the security token,
//! the metadata session token) and every answer byte for byte, as the kubelet judges it.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::path::{Path, PathBuf};

use kcp_kubelet::ApiVersion;
use kcp_testkit::{Outcome, Plugin, TempDir};
use support::*;

#[test]
fn node_role_to_an_enterprise_host_lists_the_instance_then_logs_in() {
    let fakes = Fakes::new();
    let out = enterprise(&fakes);
    assert_enterprise_answer(&out, ENTERPRISE_HOST);
    assert_eq!(
        out.stderr(),
        "",
        "an answer prints nothing at the default level"
    );
    assert_node_role_metadata(&fakes);
    assert_enterprise_login(&fakes, NODE_KEY);
    assert!(fakes.sts.requests().is_empty());
}

#[test]
fn the_vpc_host_and_every_api_version_are_answered_in_their_version() {
    for version in [ApiVersion::V1, ApiVersion::V1beta1, ApiVersion::V1alpha1] {
        for host in [ENTERPRISE_HOST, ENTERPRISE_VPC_HOST] {
            let fakes = Fakes::new();
            let out = plugin(&fakes).request(version, &image(host));
            assert_answer(&out, version, host, ENTERPRISE_PASSWORD, ONE_HOUR_ANSWER);
        }
        let fakes = Fakes::new().personal();
        let out = plugin(&fakes).request(version, &image(PERSONAL_HOST));
        assert_answer(
            &out,
            version,
            PERSONAL_HOST,
            PERSONAL_PASSWORD,
            ONE_HOUR_ANSWER,
        );
    }
}

/// A plugin with its token cache in a new directory, after one Enterprise run that listed the
/// instance and logged in, whose token cache entry is gone again: the instance map stays.
struct Remembered {
    dir: TempDir,
    fakes: Fakes,
    plugin: Plugin,
}

impl Remembered {
    fn new(label: &str) -> Remembered {
        let dir = TempDir::new(label);
        let fakes = Fakes::new();
        let p = with_cache(plugin(&fakes), &dir.path().join("cache"));
        assert_enterprise_answer(&request_enterprise(&p), ENTERPRISE_HOST);
        assert_eq!(fakes.cr.requests().len(), 2);
        let run = Remembered {
            dir,
            fakes,
            plugin: p,
        };
        remove_token_entries(&run.cache());
        run
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }
}

#[test]
fn the_instance_map_spares_list_instance_on_later_runs() {
    let run = Remembered::new("alibaba-instance-map");
    let out = request_enterprise(&run.plugin);
    assert_enterprise_answer(&out, ENTERPRISE_HOST);
    let cr = run.fakes.cr.requests();
    assert_eq!(cr.len(), 3, "zero ListInstance on the second run: {cr:#?}");
    assert_enterprise_token(&cr[2], INSTANCE_ID, NODE_KEY);
    let map = instance_map_files(&run.cache());
    assert_eq!(map.len(), 1, "one instance map: {map:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if !kcp_testkit::windows_target() {
            let mode = std::fs::metadata(&map[0]).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
    let text = std::fs::read_to_string(&map[0]).unwrap();
    assert!(
        text.contains(INSTANCE_ID) && text.contains(INSTANCE_NAME),
        "{text}"
    );
}

#[test]
fn a_remembered_instance_that_is_gone_is_listed_again_once() {
    let run = Remembered::new("alibaba-instance-gone");
    // The instance was recreated: the old ID is gone, ListInstance names a new one.
    run.fakes.cr.on(
        "GetAuthorizationToken",
        vec![
            api_error(404, "INSTANCE_NOT_EXIST", "The instance does not exist."),
            enterprise_token(ENTERPRISE_PASSWORD, ms_from_now(3600)),
        ],
    );
    run.fakes.cr.on(
        "ListInstance",
        vec![instances(&[("cri-new0000000001", INSTANCE_NAME)])],
    );
    let out = request_enterprise(&run.plugin);
    assert_enterprise_answer(&out, ENTERPRISE_HOST);
    let cr = run.fakes.cr.requests();
    let second: Vec<_> = cr[2..]
        .iter()
        .map(|r| r.header("x-acs-action").unwrap_or(""))
        .collect();
    assert_eq!(
        second,
        [
            "GetAuthorizationToken",
            "ListInstance",
            "GetAuthorizationToken"
        ],
        "{cr:#?}"
    );
    assert_enterprise_token(&cr[2], INSTANCE_ID, NODE_KEY);
    assert_enterprise_token(&cr[4], "cri-new0000000001", NODE_KEY);
    let text = std::fs::read_to_string(&instance_map_files(&run.cache())[0]).unwrap();
    assert!(
        text.contains("cri-new0000000001") && !text.contains(INSTANCE_ID),
        "{text}"
    );
}

#[test]
fn node_role_to_personal_hosts_legacy_and_crpi() {
    for host in [
        PERSONAL_HOST,
        "registry-vpc.cn-hangzhou.aliyuncs.com",
        "registry-intl.cn-hangzhou.aliyuncs.com",
        "registry-intl-vpc.cn-hangzhou.aliyuncs.com",
        CRPI_HOST,
        "crpi-k3x9q2-vpc.cn-hangzhou.personal.cr.aliyuncs.com",
    ] {
        let fakes = Fakes::new().personal();
        let out = plugin(&fakes).request(ApiVersion::V1, &image(host));
        assert_personal_answer(&out, host);
        assert_node_role_metadata(&fakes);
        assert_personal_login(&fakes, NODE_KEY);
    }
}

#[test]
fn the_role_named_by_alibaba_cloud_ecs_metadata_is_used_without_listing() {
    let other_role = md_role_path("other-role");
    let fakes = Fakes::new().metadata_on(
        &format!("GET {other_role}"),
        vec![metadata_credentials(NODE_KEY)],
    );
    let out = request_enterprise(&plugin(&fakes).env("ALIBABA_CLOUD_ECS_METADATA", "other-role"));
    assert_enterprise_answer(&out, ENTERPRISE_HOST);
    assert_metadata(&fakes.metadata.requests(), &[other_role.as_str()]);
}

#[test]
fn rrsa_to_an_enterprise_host() {
    let token = sa_token();
    for (annotation, role_arn) in [
        (POD_ROLE, POD_ROLE_ARN),
        (
            "acs:ram::999:role/path/other",
            "acs:ram::999:role/path/other",
        ),
    ] {
        let fakes = Fakes::new();
        let out = pod_request(
            &rrsa_plugin(&fakes),
            ENTERPRISE_HOST,
            &token,
            Some(annotation),
        );
        assert_enterprise_answer(&out, ENTERPRISE_HOST);
        assert_eq!(out.stderr(), "");
        assert!(
            fakes.metadata.requests().is_empty(),
            "no metadata request in RRSA mode"
        );
        let sts = fakes.sts.requests();
        assert_eq!(sts.len(), 1);
        assert_assume_role(&sts[0], role_arn, &token, 3600);
        assert_enterprise_login(&fakes, POD_KEY);
    }
}

#[test]
fn rrsa_account_and_session_duration_flags() {
    let token = sa_token();
    let fakes = Fakes::new();
    let p = rrsa_plugin(&fakes).args(["--account-id=777", "--session-duration=2h"]);
    pod_request(&p, ENTERPRISE_HOST, &token, Some(POD_ROLE)).accepted();
    assert_assume_role(
        &fakes.sts.requests()[0],
        "acs:ram::777:role/app-puller",
        &token,
        7200,
    );
}

#[test]
fn a_token_without_the_role_annotation_pulls_as_the_node_with_one_info_line() {
    let token = sa_token();
    let fakes = Fakes::new();
    let out = pod_request(
        &rrsa_plugin(&fakes).args(["--v=2"]),
        ENTERPRISE_HOST,
        &token,
        None,
    );
    assert_enterprise_answer(&out, ENTERPRISE_HOST);
    let stderr = out.stderr();
    let fallback: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("no RAM role annotation"))
        .collect();
    assert_eq!(fallback.len(), 1, "{stderr}");
    assert!(
        fallback[0].contains(" INFO ") && fallback[0].contains(ROLE_KEY),
        "{stderr}"
    );
    assert!(fakes.sts.requests().is_empty());
    let cr = fakes.cr.requests();
    assert_enterprise_token(&cr[1], INSTANCE_ID, NODE_KEY);
    // At the default level: nothing at all.
    let fakes = Fakes::new();
    let out = pod_request(&rrsa_plugin(&fakes), ENTERPRISE_HOST, &token, None);
    out.accepted();
    assert_eq!(out.stderr(), "");
}

#[test]
fn static_keys_make_no_metadata_request() {
    let fakes = Fakes::new();
    let out = request_enterprise(&static_plugin(&fakes));
    assert_enterprise_answer(&out, ENTERPRISE_HOST);
    assert!(fakes.metadata.requests().is_empty());
    assert_enterprise_login(&fakes, STATIC_KEY);

    let fakes = Fakes::new().personal();
    let sts_key = Signed {
        key_id: "STS.static-sts-id",
        secret: STATIC_KEY.secret,
        security_token: Some("static-security-token-Lp0"),
    };
    let out = static_plugin(&fakes)
        .env("ALIBABA_CLOUD_ACCESS_KEY_ID", sts_key.key_id)
        .env(
            "ALIBABA_CLOUD_SECURITY_TOKEN",
            sts_key.security_token.unwrap(),
        )
        .request(ApiVersion::V1, &image(CRPI_HOST));
    assert_personal_answer(&out, CRPI_HOST);
    assert!(fakes.metadata.requests().is_empty());
    assert_personal_login(&fakes, sts_key);
}

/// [`plugin`] told that [`CUSTOM_HOST`] is [`INSTANCE_ID`], asked for an image there.
fn custom_domain(fakes: &Fakes) -> Outcome {
    plugin(fakes)
        .args([format!("--instance={CUSTOM_HOST}={INSTANCE_ID}")])
        .request(ApiVersion::V1, &image(CUSTOM_HOST))
}

#[test]
fn an_instance_flag_answers_a_custom_domain() {
    let fakes = Fakes::new();
    assert_enterprise_answer(&custom_domain(&fakes), CUSTOM_HOST);
    assert_known_instance_login(&fakes, NODE_KEY);

    // With a port, from the environment, and --region: no region-id read.
    let fakes = Fakes::new();
    let host = "mirror.example.com:5000";
    let out = plugin(&fakes)
        .env(
            "ALIBABA_CR_INSTANCES",
            format!("other.example.com=cri-0,{host}={INSTANCE_ID}"),
        )
        .args(["--region=cn-hangzhou"])
        .request(ApiVersion::V1, &image(host));
    assert_enterprise_answer(&out, host);
    assert_node_role_metadata(&fakes);
    assert_known_instance_login(&fakes, NODE_KEY);
}

#[test]
fn no_region_is_read_when_the_endpoints_are_given() {
    // The region only builds default endpoints (https://cr.<region>.aliyuncs.com), which these
    // tests never reach: with both given, a custom domain needs no region at all.
    let fakes = Fakes::new();
    custom_domain(&fakes).accepted();
    let md: Vec<String> = fakes
        .metadata
        .requests()
        .iter()
        .filter(|r| r.method == "GET")
        .map(|r| r.target.clone())
        .collect();
    assert!(!md.contains(&MD_REGION_PATH.to_owned()), "{md:?}");
}

#[test]
fn a_login_is_never_cached_past_the_credentials_that_obtained_it() {
    // Logins valid for three hours.
    let fakes = || {
        Fakes::new().cr_on(
            "GetAuthorizationToken",
            vec![enterprise_token(ENTERPRISE_PASSWORD, ms_from_now(3 * 3600))],
        )
    };
    // The STS credentials end in two hours; a login valid for three is answered for two.
    let pod = fakes();
    let out = pod_request(
        &rrsa_plugin(&pod),
        ENTERPRISE_HOST,
        &sa_token(),
        Some(POD_ROLE),
    );
    assert_answer(
        &out,
        ApiVersion::V1,
        ENTERPRISE_HOST,
        ENTERPRISE_PASSWORD,
        7200 - 300,
    );
    // The node role's credentials live six hours: a three-hour login keeps its three hours.
    let out = enterprise(&fakes());
    assert_answer(
        &out,
        ApiVersion::V1,
        ENTERPRISE_HOST,
        ENTERPRISE_PASSWORD,
        3 * 3600 - 300,
    );
}

/// Removes the token cache's entries (32 hex digits `.json`), keeping the instance map.
fn remove_token_entries(dir: &Path) {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".json")
            && stem.len() == 32
            && stem.bytes().all(|b| b.is_ascii_hexdigit())
        {
            std::fs::remove_file(&path).unwrap();
            removed += 1;
        }
    }
    assert_eq!(removed, 1, "one token cache entry");
}

/// The instance map files in a cache directory.
fn instance_map_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("alibaba-instances-")
        })
        .collect()
}

/// Exactly one auth key of the answer matches each image as the kubelet's keyring matches it
/// (every matching key is handed to the runtime: two would mean the same login tried twice and a
/// failed pull reported twice): the answer's one key is the image's registry as written, for
/// every host form, with tags, digests and deep paths, and a port on a custom domain.
#[test]
fn the_kubelets_keyring_finds_exactly_one_credential_per_image() {
    let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let cases: Vec<(String, &str, bool)> = vec![
        (
            format!("{ENTERPRISE_HOST}/team/app:1.0"),
            ENTERPRISE_HOST,
            false,
        ),
        (
            format!("{ENTERPRISE_VPC_HOST}/team/sub/app"),
            ENTERPRISE_VPC_HOST,
            false,
        ),
        (
            format!("{PERSONAL_HOST}/ns/app@{digest}"),
            PERSONAL_HOST,
            true,
        ),
        (
            "registry-intl.cn-hangzhou.aliyuncs.com/ns/app".to_owned(),
            "registry-intl.cn-hangzhou.aliyuncs.com",
            true,
        ),
        (format!("{CRPI_HOST}/ns/app:v2"), CRPI_HOST, true),
    ];
    for (img, host, personal) in &cases {
        let fakes = if *personal {
            Fakes::new().personal()
        } else {
            Fakes::new()
        };
        let ok = plugin(&fakes).request(ApiVersion::V1, img).accepted();
        assert_eq!(
            ok.auth.keys().map(String::as_str).collect::<Vec<_>>(),
            [*host],
            "{img}"
        );
        assert_eq!(
            ok.keys_for_image(img),
            [*host],
            "{img}: the kubelet's keyring"
        );
    }
    let fakes = Fakes::new();
    let host = "mirror.example.com:5000";
    let img = format!("{host}/team/app:1.0");
    let ok = plugin(&fakes)
        .args([
            format!("--instance={host}={INSTANCE_ID}"),
            "--region=cn-hangzhou".to_owned(),
        ])
        .request(ApiVersion::V1, &img)
        .accepted();
    assert_eq!(
        ok.keys_for_image(&img),
        [host],
        "{img}: the kubelet's keyring"
    );
}
