//! The ready-to-use configs in `testdata/configs` (top level; `real/` and `broken/` have their own
//! tests): each one validates clean against a bin dir holding our binaries, its providers'
//! `matchImages` hit exactly the images they should (asked of the checker's `match`), and every
//! flag in its `args` is one the provider knows. The table below must list every file, so a new
//! config cannot be added without saying what it matches.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::collections::BTreeSet;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use common::{PROVIDERS, check, configs_dir, exe, messages, target_bin_dir, validate_bin_dir};
use kcp_testkit::TempDir;

/// Which registries a provider entry is meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Ecr,
    Acr,
    Gcr,
    Static,
    Oidc,
    Alibaba,
}

const ECR_IMAGES: &[&str] = &[
    "123456789012.dkr.ecr.us-west-2.amazonaws.com/team/app:v1.2",
    "123456789012.dkr-ecr.eu-west-1.on.aws/app",
    "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/app",
    "123456789012.dkr-ecr.cn-north-1.on.amazonwebservices.com.cn/app",
    "123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com/app",
    "123456789012.dkr-ecr-fips.us-east-1.on.aws/app",
    "123456789012.dkr.ecr.us-iso-east-1.c2s.ic.gov/app",
    "123456789012.dkr.ecr.us-isob-east-1.sc2s.sgov.gov/app",
    "123456789012.dkr.ecr.eu-isoe-west-1.cloud.adc-e.uk/app",
    "123456789012.dkr.ecr.us-isof-south-1.csp.hci.ic.gov/app",
    "123456789012.dkr.ecr.eusc-de-east-1.amazonaws.eu/app",
    "public.ecr.aws/eks-distro/kubernetes/pause:3.9",
    "ecr-public.aws.com/docker/library/nginx",
];

const ACR_IMAGES: &[&str] = &[
    "myregistry.azurecr.io/team/app:1.0",
    "myregistry.azurecr.cn/app",
    "myregistry.azurecr.de/app",
    "myregistry.azurecr.us/app",
    "myregistry.westeurope.geo.azurecr.io/app",
];

const GCR_IMAGES: &[&str] = &[
    "gcr.io/my-project/app:1.0",
    "eu.gcr.io/my-project/app",
    "us-docker.pkg.dev/my-project/repo/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "container.cloud.google.com/x/y",
];

const STATIC_IMAGES: &[&str] = &["registry.example.com/team/app:1.0"];

const OIDC_IMAGES: &[&str] = &[
    "registry.acme.internal/team/app:1.0",
    "harbor.acme.internal/library/app",
];

const ALIBABA_IMAGES: &[&str] = &[
    "my-instance-registry.cn-hangzhou.cr.aliyuncs.com/team/app:1.0",
    "my-instance-registry-vpc.cn-hangzhou.cr.aliyuncs.com/team/app",
    "registry.cn-hangzhou.aliyuncs.com/ns/app:1.0",
    "registry-vpc.cn-shanghai.aliyuncs.com/ns/app",
    "registry-intl.ap-southeast-1.aliyuncs.com/ns/app",
    "registry-intl-vpc.ap-southeast-1.aliyuncs.com/ns/app",
    "crpi-abc123def456.cn-hangzhou.personal.cr.aliyuncs.com/ns/app",
    "crpi-abc123def456-vpc.cn-hangzhou.personal.cr.aliyuncs.com/ns/app",
];

/// No ready config may run a plugin for these.
const NOBODY: &[&str] = &[
    "nginx:1.27",
    "quay.io/org/app",
    "ghcr.io/org/app",
    "registry.k8s.io/pause:3.10",
    // A port the patterns do not spell out never matches (docs/kubelet-contract.md “Matching”).
    "123456789012.dkr.ecr.us-east-1.amazonaws.com:443/app",
    "myregistry.azurecr.io.evil.example/app",
    "a.b.gcr.io/app",
    "mcr.microsoft.com/oss/nginx/nginx",
    "registry.acme.internal.evil.example/app",
    "registry.cn-hangzhou.aliyuncs.com.evil.test/ns/app",
    "x-registry.cn-hangzhou.cr.aliyuncs.com.attacker/app",
    "oss-cn-hangzhou.aliyuncs.com/x",
];

fn images(family: Family) -> &'static [&'static str] {
    match family {
        Family::Ecr => ECR_IMAGES,
        Family::Acr => ACR_IMAGES,
        Family::Gcr => GCR_IMAGES,
        Family::Static => STATIC_IMAGES,
        Family::Oidc => OIDC_IMAGES,
        Family::Alibaba => ALIBABA_IMAGES,
    }
}

/// One ready config: its providers in order (name, family, service-account mode) and images
/// matched beyond the families' (image, provider).
struct Ready {
    file: &'static str,
    providers: &'static [(&'static str, Family, bool)],
    extra: &'static [(&'static str, &'static str)],
}

const ECR: &str = "ecr-credential-provider";
const ACR: &str = "acr-credential-provider";
const GCR: &str = "gcr-credential-provider";
const STATIC: &str = "static-credential-provider";
const OIDC: &str = "oidc-credential-provider";
const ALIBABA: &str = "alibaba-credential-provider";

const READY: &[Ready] = &[
    Ready {
        file: "ecr.yaml",
        providers: &[(ECR, Family::Ecr, false)],
        extra: &[],
    },
    Ready {
        file: "ecr-mirror-roles.yaml",
        providers: &[(ECR, Family::Ecr, false)],
        // The mirror source: Docker Hub images, however the pod spec writes them.
        extra: &[("nginx:1.27", ECR), ("docker.io/library/busybox", ECR)],
    },
    Ready {
        file: "ecr-service-account.yaml",
        providers: &[(ECR, Family::Ecr, true)],
        extra: &[],
    },
    Ready {
        file: "eks-al2023.json",
        providers: &[(ECR, Family::Ecr, false)],
        extra: &[],
    },
    Ready {
        file: "eks-al2023-service-account.yaml",
        providers: &[(ECR, Family::Ecr, true)],
        extra: &[],
    },
    Ready {
        file: "eks-al2023-pod-identity.yaml",
        providers: &[(ECR, Family::Ecr, true)],
        extra: &[],
    },
    Ready {
        file: "eks-hybrid-roles-anywhere.yaml",
        providers: &[(ECR, Family::Ecr, false)],
        extra: &[],
    },
    Ready {
        file: "acr.yaml",
        providers: &[(ACR, Family::Acr, false)],
        // The mirror source mapped with --registry-mirror.
        extra: &[("mcr.microsoft.com/oss/nginx/nginx", ACR)],
    },
    Ready {
        file: "acr-service-account.yaml",
        providers: &[(ACR, Family::Acr, true)],
        extra: &[],
    },
    Ready {
        file: "aks.yaml",
        providers: &[(ACR, Family::Acr, false)],
        extra: &[],
    },
    Ready {
        file: "aks-workload-identity.yaml",
        providers: &[(ACR, Family::Acr, true)],
        extra: &[],
    },
    Ready {
        file: "aks-identity-bindings.yaml",
        providers: &[(ACR, Family::Acr, true)],
        extra: &[],
    },
    Ready {
        file: "arc-kubeadm.yaml",
        providers: &[(ACR, Family::Acr, false)],
        extra: &[],
    },
    Ready {
        file: "aks-windows.yaml",
        providers: &[(ACR, Family::Acr, false)],
        extra: &[],
    },
    Ready {
        file: "eks-windows.yaml",
        providers: &[(ECR, Family::Ecr, false)],
        extra: &[],
    },
    Ready {
        file: "gcr.yaml",
        providers: &[(GCR, Family::Gcr, false)],
        extra: &[],
    },
    Ready {
        file: "gcr-workload-identity.yaml",
        providers: &[(GCR, Family::Gcr, true)],
        extra: &[],
    },
    Ready {
        file: "gke.yaml",
        providers: &[(GCR, Family::Gcr, false)],
        extra: &[],
    },
    Ready {
        file: "gke-workload-identity.yaml",
        providers: &[(GCR, Family::Gcr, true)],
        extra: &[],
    },
    Ready {
        file: "oidc.yaml",
        providers: &[(OIDC, Family::Oidc, true)],
        extra: &[],
    },
    Ready {
        file: "alibaba.yaml",
        providers: &[(ALIBABA, Family::Alibaba, false)],
        extra: &[],
    },
    Ready {
        file: "alibaba-service-account.yaml",
        providers: &[(ALIBABA, Family::Alibaba, true)],
        extra: &[],
    },
    Ready {
        file: "kubeadm.yaml",
        providers: &[
            (ECR, Family::Ecr, false),
            (ACR, Family::Acr, false),
            (GCR, Family::Gcr, false),
            (STATIC, Family::Static, false),
        ],
        extra: &[],
    },
    Ready {
        file: "kubeadm-service-account.yaml",
        providers: &[
            (ECR, Family::Ecr, true),
            (ACR, Family::Acr, true),
            (GCR, Family::Gcr, true),
            (STATIC, Family::Static, false),
        ],
        extra: &[],
    },
];

/// The config files the kubelet would read from `testdata/configs` as a directory.
fn ready_files() -> BTreeSet<String> {
    std::fs::read_dir(configs_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            )
        })
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// A bin dir holding links to our built binaries, as an operator would install them.
fn bin_dir(dir: &TempDir) -> std::path::PathBuf {
    let target = target_bin_dir();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in PROVIDERS {
        symlink(target.join(exe(name)), bin.join(exe(name))).unwrap();
    }
    bin
}

/// `match --output json`: the names of the providers the kubelet would run, in order.
fn matching(config: &Path, image: &str) -> Vec<String> {
    let run = check([
        "match".as_ref(),
        "--output".as_ref(),
        "json".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
        image.as_ref(),
    ]);
    let report = run.json();
    let names: Vec<String> = report["matching"]
        .as_array()
        .unwrap_or_else(|| panic!("no matching list: {report}"))
        .iter()
        .map(|n| n.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(run.code, if names.is_empty() { 1 } else { 0 }, "{report}");
    names
}

#[test]
fn every_ready_config_is_in_the_table() {
    let listed: BTreeSet<String> = READY.iter().map(|r| r.file.to_owned()).collect();
    assert_eq!(listed.len(), READY.len(), "a file is listed twice");
    assert_eq!(
        ready_files(),
        listed,
        "testdata/configs and READY in {} differ: add the new config to READY with what it must match",
        file!()
    );
}

#[test]
fn ready_configs_validate_clean_against_our_binaries() {
    let dir = TempDir::new("ready-validate");
    let bin = bin_dir(&dir);
    for ready in READY {
        let path = configs_dir().join(ready.file);
        let run = validate_bin_dir(&path, &bin);
        let report = run.json();
        let name = ready.file;
        assert_eq!(run.code, 0, "{name}: {report}");
        assert_eq!(report["valid"], true, "{name}");
        assert_eq!(report["kubeletError"], serde_json::Value::Null, "{name}");
        assert!(messages(&report, "errors").is_empty(), "{name}: {report}");
        assert!(
            messages(&report, "registrationErrors").is_empty(),
            "{name}: {report}"
        );
        assert!(messages(&report, "warnings").is_empty(), "{name}: {report}");
        let providers = report["config"]["providers"].as_array().unwrap();
        let got: Vec<(&str, bool)> = providers
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap(),
                    p["tokenAttributes"].as_bool().unwrap(),
                )
            })
            .collect();
        let want: Vec<(&str, bool)> = ready.providers.iter().map(|(n, _, sa)| (*n, *sa)).collect();
        assert_eq!(got, want, "{name}: providers and their token mode");
        for p in providers {
            assert_eq!(
                p["apiVersion"], "credentialprovider.kubelet.k8s.io/v1",
                "{name}: every ready config speaks v1"
            );
        }
        // The only notes are the feature-gate reminder, once per service-account provider, and
        // that oidc's registries file (a node path) is not on this machine.
        let sa = ready.providers.iter().filter(|(_, _, sa)| *sa).count();
        let oidc = ready
            .providers
            .iter()
            .filter(|(n, _, _)| *n == OIDC)
            .count();
        let notes = messages(&report, "notes");
        assert_eq!(notes.len(), sa + oidc, "{name}: {notes:?}");
        assert_eq!(
            notes
                .iter()
                .filter(|n| n.contains("KubeletServiceAccountTokenForCredentialProviders"))
                .count(),
            sa,
            "{name}: {notes:?}"
        );
        assert_eq!(
            notes
                .iter()
                .filter(|n| n.starts_with(
                    "registries file /etc/kubernetes/oidc-registries.yaml is not on this machine"
                ))
                .count(),
            oidc,
            "{name}: {notes:?}"
        );
    }
}

#[test]
fn ready_configs_match_what_they_should_and_nothing_else() {
    let all: Vec<&str> = [
        ECR_IMAGES,
        ACR_IMAGES,
        GCR_IMAGES,
        STATIC_IMAGES,
        OIDC_IMAGES,
        ALIBABA_IMAGES,
        NOBODY,
    ]
    .concat()
    .to_vec();
    for ready in READY {
        let path = configs_dir().join(ready.file);
        for image in &all {
            let want: Vec<String> = ready
                .providers
                .iter()
                .filter(|(name, family, _)| {
                    images(*family).contains(image) || ready.extra.contains(&(*image, *name))
                })
                .map(|(name, _, _)| (*name).to_owned())
                .collect();
            assert_eq!(
                matching(&path, image),
                want,
                "{}: providers run for {image}",
                ready.file
            );
        }
        for (image, provider) in ready.extra {
            assert_eq!(matching(&path, image), [*provider], "{}", ready.file);
        }
    }
}

/// Every `--flag` in a ready config's `args` appears in that provider's `--help`: our providers
/// ignore unknown flags with a warning, so a typo would otherwise only show up on a node.
#[test]
fn ready_config_args_are_flags_the_providers_know() {
    let target = target_bin_dir();
    let help = |name: &str| {
        let out = Command::new(target.join(exe(name)))
            .arg("--help")
            .output()
            .unwrap();
        assert!(out.status.success(), "{name} --help");
        String::from_utf8(out.stdout).unwrap()
    };
    let helps: Vec<(&str, String)> = PROVIDERS.iter().map(|n| (*n, help(n))).collect();
    let mut flags_seen = 0;
    for ready in READY {
        let providers =
            kcp_kubelet_emulation::config::load_file(&configs_dir().join(ready.file)).unwrap();
        for provider in &providers {
            let name = provider.name.as_str();
            let help = &helps.iter().find(|(n, _)| *n == name).unwrap().1;
            for arg in &provider.args {
                let Some(flag) = arg.strip_prefix("--") else {
                    continue;
                };
                let flag = format!("--{}", flag.split('=').next().unwrap());
                let known = help.match_indices(&flag).any(|(at, _)| {
                    !help[at + flag.len()..]
                        .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
                });
                assert!(known, "{}: {name} has no flag {flag}", ready.file);
                flags_seen += 1;
            }
        }
    }
    assert!(flags_seen >= 10, "only {flags_seen} flags checked");
}
