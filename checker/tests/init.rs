//! `credential-provider-check init`: its exact output for each provider, that every provider x
//! platform x mode it can print passes the kubelet's rules, that the examples in `testdata/configs`
//! are exactly what it prints (so they cannot drift from the defaults), its drop-ins, and its
//! contract: the config alone on stdout, one line on stderr for every error, exit 2 for bad
//! options and 1 for a config the kubelet would refuse.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // Test code: a panic is a failed assertion.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{Run, check, configs_dir};
use kcp_kubelet_emulation::config::{self, Provider};
use kcp_kubelet_emulation::validate;
use kcp_testkit::TempDir;

/// Runs `credential-provider-check init ARGS`.
fn init(args: &[&str]) -> Run {
    check(std::iter::once("init").chain(args.iter().copied()))
}

/// Runs init and insists on success: exit 0, the config on stdout, nothing on stderr.
fn init_ok(args: &[&str]) -> String {
    let run = init(args);
    assert_eq!(run.code, 0, "init {args:?}: {}", run.stderr);
    assert_eq!(run.stderr, "", "init {args:?}");
    assert!(run.stdout.ends_with('\n'), "init {args:?}");
    run.stdout
}

/// Loads config text as the kubelet would (through a file named `name`), providers only.
fn load_text(dir: &TempDir, name: &str, text: &str) -> Vec<Provider> {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    load(&path)
}

/// `config::load`, with each provider's source cleared so two files can be compared.
fn load(path: &Path) -> Vec<Provider> {
    let config = config::load(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    config
        .providers
        .into_iter()
        .map(|p| Provider {
            source: Default::default(),
            ..p
        })
        .collect()
}

/// Loads and validates: no error, no registration error, no warning.
fn assert_clean(path: &Path, what: &str) -> config::Config {
    let config = config::load(path).unwrap_or_else(|e| panic!("{what}: {e}"));
    let v = validate::validate(&config, None);
    assert!(v.ok(), "{what}: {:?}", v.kubelet_message());
    assert!(v.warnings.is_empty(), "{what}: {:?}", v.warnings);
    config
}

const GKE_IDENTITY: &[&str] = &[
    "--gcr-identity-provider",
    "https://container.googleapis.com/v1/projects/my-project/locations/us-central1/clusters/my-cluster",
    "--gcr-project-id",
    "my-project",
];
const WIF: &[&str] = &[
    "--gcr-wif-audience",
    "//iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/my-pool/providers/my-cluster",
];
const STATIC: &[&str] = &[
    "--static-registry",
    "registry.example.com",
    "--static-username",
    "robot-puller",
    "--static-password-file",
    "/etc/kubernetes/registry.example.com.password",
];
const STATIC_WINDOWS: &[&str] = &[
    "--static-registry",
    "registry.example.com",
    "--static-username",
    "robot-puller",
    "--static-password-file",
    r"C:\k\registry.example.com.password",
];
const ALIBABA_RRSA: &[&str] = &[
    "--alibaba-oidc-provider-arn",
    "acs:ram::1234567890123456:oidc-provider/ack-rrsa-c0123456789abcdef",
];
const STRICT: &[&str] = &["--arg", "ecr=--strict-hosts", "--arg", "gcr=--strict-hosts"];

/// Every example in `testdata/configs` and the `init` command that prints it.
fn examples() -> Vec<(&'static str, Vec<&'static str>)> {
    let cat = |parts: &[&[&'static str]]| parts.concat();
    vec![
        ("ecr.yaml", cat(&[&["--provider", "ecr"]])),
        (
            "ecr-service-account.yaml",
            cat(&[&["--provider", "ecr", "--service-account"]]),
        ),
        (
            "ecr-mirror-roles.yaml",
            cat(&[&[
                "--provider",
                "ecr",
                "--ecr-registry-mirror",
                "docker.io:123456789012.dkr.ecr.us-west-2.amazonaws.com",
                "--ecr-assume-role",
                "123456789012=arn:aws:iam::123456789012:role/ecr-pull",
                "--ecr-assume-role",
                "210987654321=arn:aws:iam::210987654321:role/ecr-pull-from-nodes",
            ]]),
        ),
        (
            "eks-al2023.json",
            cat(&[&["--provider", "ecr", "--platform", "eks", "--format", "json"]]),
        ),
        (
            "eks-al2023-service-account.yaml",
            cat(&[&[
                "--provider",
                "ecr",
                "--platform",
                "eks",
                "--service-account",
            ]]),
        ),
        (
            "eks-al2023-pod-identity.yaml",
            cat(&[&[
                "--provider",
                "ecr",
                "--platform",
                "eks",
                "--service-account",
                "--ecr-eks-pod-identity-cluster",
                "my-cluster",
            ]]),
        ),
        (
            "eks-hybrid-roles-anywhere.yaml",
            cat(&[&["--provider", "ecr", "--platform", "eks-hybrid"]]),
        ),
        (
            "acr.yaml",
            cat(&[&[
                "--provider",
                "acr",
                "--acr-registry-mirror",
                "mcr.microsoft.com:myregistry.azurecr.io",
            ]]),
        ),
        (
            "acr-service-account.yaml",
            cat(&[&["--provider", "acr", "--service-account"]]),
        ),
        (
            "aks.yaml",
            cat(&[&["--provider", "acr", "--platform", "aks"]]),
        ),
        (
            "aks-workload-identity.yaml",
            cat(&[&[
                "--provider",
                "acr",
                "--platform",
                "aks",
                "--service-account",
            ]]),
        ),
        (
            "aks-identity-bindings.yaml",
            cat(&[&[
                "--provider",
                "acr",
                "--platform",
                "aks",
                "--service-account",
                "--acr-ib-sni-name",
                "ib.mycluster-a1b2c3d4.hcp.eastus.azmk8s.io",
                "--acr-ib-apiserver-ip",
                "mycluster-a1b2c3d4.hcp.eastus.azmk8s.io",
            ]]),
        ),
        (
            "arc-kubeadm.yaml",
            cat(&[&[
                "--provider",
                "acr",
                "--platform",
                "kubeadm",
                "--env",
                "acr=IDENTITY_ENDPOINT=http://localhost:40342/metadata/identity/oauth2/token",
                "--env",
                "acr=IMDS_ENDPOINT=http://localhost:40342",
            ]]),
        ),
        (
            "aks-windows.yaml",
            cat(&[&["--provider", "acr", "--platform", "aks-windows"]]),
        ),
        (
            "eks-windows.yaml",
            cat(&[&["--provider", "ecr", "--platform", "eks-windows"]]),
        ),
        ("gcr.yaml", cat(&[&["--provider", "gcr"]])),
        (
            "gcr-workload-identity.yaml",
            cat(&[&["--provider", "gcr", "--service-account"], GKE_IDENTITY]),
        ),
        (
            "gke.yaml",
            cat(&[&["--provider", "gcr", "--platform", "gke"]]),
        ),
        (
            "gke-workload-identity.yaml",
            cat(&[
                &[
                    "--provider",
                    "gcr",
                    "--platform",
                    "gke",
                    "--service-account",
                ],
                GKE_IDENTITY,
            ]),
        ),
        ("oidc.yaml", cat(&[&["--provider", "oidc"], OIDC])),
        ("alibaba.yaml", cat(&[&["--provider", "alibaba"]])),
        (
            "alibaba-service-account.yaml",
            cat(&[
                &["--provider", "alibaba", "--service-account"],
                ALIBABA_RRSA,
            ]),
        ),
        (
            "kubeadm.yaml",
            cat(&[&["--provider", "ecr,acr,gcr,static"], STRICT, STATIC]),
        ),
        (
            "kubeadm-service-account.yaml",
            cat(&[
                &["--provider", "ecr,acr,gcr,static", "--service-account"],
                STRICT,
                WIF,
                STATIC,
            ]),
        ),
    ]
}

/// The `init` command a YAML example names in its top comment ("The same config ...: init ARGS",
/// continued with `\`), as arguments.
fn command_in_comment(text: &str) -> Vec<String> {
    const LEAD: &str =
        "# The same config (up to comments and layout): credential-provider-check init ";
    let mut lines = text.lines().skip_while(|l| !l.starts_with(LEAD));
    let mut command = lines
        .next()
        .unwrap_or_else(|| panic!("no line starting {LEAD:?}"))[LEAD.len()..]
        .to_owned();
    while let Some(rest) = command.strip_suffix(" \\") {
        command = format!(
            "{rest} {}",
            lines.next().unwrap().trim_start_matches('#').trim()
        );
    }
    command.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn every_example_config_is_in_the_table() {
    let listed: BTreeSet<&str> = examples().iter().map(|(f, _)| *f).collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(configs_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        on_disk,
        listed.iter().map(|s| (*s).to_owned()).collect(),
        "testdata/configs and examples() in {} differ: every example must be an init output",
        file!()
    );
}

/// The examples are init's output, read as the kubelet reads them: the same providers, fields
/// and order. Only comments and layout may differ, and each YAML example names its command.
#[test]
fn every_example_config_is_what_init_prints() {
    let dir = TempDir::new("init-examples");
    for (file, args) in examples() {
        let path = configs_dir().join(file);
        let generated = init_ok(&args);
        let ext = Path::new(file).extension().unwrap().to_str().unwrap();
        let ours = load_text(&dir, &format!("generated.{ext}"), &generated);
        assert_eq!(
            load(&path),
            ours,
            "{file} differs from init {}",
            args.join(" ")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        if ext == "yaml" {
            assert_eq!(
                command_in_comment(&text),
                args,
                "{file}: the command in its comment"
            );
        }
    }
}

/// nodeadm's own file, byte for byte.
#[test]
fn eks_json_is_exactly_nodeadms_file() {
    let want = std::fs::read_to_string(configs_dir().join("eks-al2023.json")).unwrap();
    assert_eq!(
        init_ok(&["--provider", "ecr", "--platform", "eks", "--format", "json"]),
        want
    );
}

#[test]
fn exact_yaml_for_ecr() {
    assert_eq!(
        init_ok(&["--provider", "ecr"]),
        r#"# Kubelet flags:
#   --image-credential-provider-config=/etc/kubernetes/credential-provider-config.yaml
#   --image-credential-provider-bin-dir=/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: ecr-credential-provider
    matchImages:
      - "*.dkr.ecr.*.amazonaws.com"
      - "*.dkr-ecr.*.on.aws"
      - "*.dkr.ecr.*.amazonaws.com.cn"
      - "*.dkr-ecr.*.on.amazonwebservices.com.cn"
      - "*.dkr.ecr-fips.*.amazonaws.com"
      - "*.dkr-ecr-fips.*.on.aws"
      - "*.dkr.ecr.*.c2s.ic.gov"
      - "*.dkr.ecr.*.sc2s.sgov.gov"
      - "*.dkr.ecr.*.cloud.adc-e.uk"
      - "*.dkr.ecr.*.csp.hci.ic.gov"
      - "*.dkr.ecr.*.amazonaws.eu"
      - "public.ecr.aws"
      - "ecr-public.aws.com"
    defaultCacheDuration: "12h"
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args:
      - "get-credentials"
"#
    );
}

#[test]
fn exact_yaml_for_acr_on_aks_with_service_accounts() {
    assert_eq!(
        init_ok(&[
            "--provider",
            "acr",
            "--platform",
            "aks",
            "--service-account"
        ]),
        r#"# Kubelet flags:
#   --image-credential-provider-config=/var/lib/kubelet/credential-provider-config.yaml
#   --image-credential-provider-bin-dir=/var/lib/kubelet/credential-provider
# Nodes need RBAC verb request-serviceaccounts-token-audience on each serviceAccountTokenAudience.
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: acr-credential-provider
    matchImages:
      - "*.azurecr.io"
      - "*.azurecr.cn"
      - "*.azurecr.de"
      - "*.azurecr.us"
      - "*.*.*.azurecr.io"
    defaultCacheDuration: "10m"
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args:
      - "/etc/kubernetes/azure.json"
    tokenAttributes:
      serviceAccountTokenAudience: "api://AzureADTokenExchange"
      cacheType: ServiceAccount
      requireServiceAccount: false
      optionalServiceAccountAnnotationKeys:
        - "kubernetes.azure.com/acr-client-id"
        - "kubernetes.azure.com/acr-tenant-id"
"#
    );
}

#[test]
fn exact_yaml_for_gcr_with_workload_identity_federation_on_k3s() {
    assert_eq!(
        init_ok(&[
            "--provider",
            "gcr",
            "--platform",
            "k3s",
            "--service-account",
            "--gcr-wif-audience",
            "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/pool/providers/prov",
            "--arg",
            "gcr=--strict-hosts",
        ]),
        r#"# Kubelet flags:
#   --image-credential-provider-config=/var/lib/rancher/credentialprovider/config.yaml
#   --image-credential-provider-bin-dir=/var/lib/rancher/credentialprovider/bin
# Nodes need RBAC verb request-serviceaccounts-token-audience on each serviceAccountTokenAudience.
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: gcr-credential-provider
    matchImages:
      - "container.cloud.google.com"
      - "gcr.io"
      - "*.gcr.io"
      - "*.pkg.dev"
    defaultCacheDuration: "1m"
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args:
      - "get-credentials"
      - "--wif-audience=//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/pool/providers/prov"
      - "--strict-hosts"
    tokenAttributes:
      serviceAccountTokenAudience: "https://iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/pool/providers/prov"
      cacheType: ServiceAccount
      requireServiceAccount: false
      optionalServiceAccountAnnotationKeys:
        - "iam.gke.io/enable-wi-image-pull"
        - "iam.gke.io/gcp-service-account"
"#
    );
}

/// alibaba in RRSA mode: the OIDC provider and its account in args, a custom domain's instance
/// added to args and matchImages, tokenAttributes for sts.aliyuncs.com with the role annotation.
#[test]
fn exact_yaml_for_alibaba_with_rrsa_and_a_custom_domain() {
    assert_eq!(
        init_ok(&[
            "--provider",
            "alibaba",
            "--service-account",
            "--alibaba-oidc-provider-arn",
            "acs:ram::1234567890123456:oidc-provider/ack-rrsa-c1",
            "--alibaba-instance",
            "Registry.Example.com=cri-abc123",
            "--alibaba-instance",
            "shop-registry.cn-hangzhou.cr.aliyuncs.com=cri-def456",
        ]),
        r#"# Kubelet flags:
#   --image-credential-provider-config=/etc/kubernetes/credential-provider-config.yaml
#   --image-credential-provider-bin-dir=/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec
# Nodes need RBAC verb request-serviceaccounts-token-audience on each serviceAccountTokenAudience.
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: alibaba-credential-provider
    matchImages:
      - "registry*.*.aliyuncs.com"
      - "*-registry*.*.cr.aliyuncs.com"
      - "crpi-*.*.personal.cr.aliyuncs.com"
      - "registry.example.com"
    defaultCacheDuration: "55m"
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args:
      - "get-credentials"
      - "--oidc-provider-arn=acs:ram::1234567890123456:oidc-provider/ack-rrsa-c1"
      - "--instance=Registry.Example.com=cri-abc123"
      - "--instance=shop-registry.cn-hangzhou.cr.aliyuncs.com=cri-def456"
    tokenAttributes:
      serviceAccountTokenAudience: "sts.aliyuncs.com"
      cacheType: ServiceAccount
      requireServiceAccount: false
      optionalServiceAccountAnnotationKeys:
        - "pod-identity.alibabacloud.com/role-name"
"#
    );
}

/// alibaba's default matchImages, as the kubelet matches them (one `*` per label, each label a
/// glob): every Container Registry host form, and neither look-alikes nor other Alibaba Cloud
/// hosts.
#[test]
fn alibaba_match_images_cover_every_registry_host_and_nothing_else() {
    let text = init_ok(&["--provider", "alibaba"]);
    let dir = TempDir::new("init-alibaba-match");
    let providers = load_text(&dir, "c.yaml", &text);
    let patterns = &providers[0].match_images;
    let matches = |image: &str| {
        patterns
            .iter()
            .filter(|p| kcp_kubelet::matching::match_image(p, image))
            .count()
    };
    for image in [
        "my-instance-registry.cn-hangzhou.cr.aliyuncs.com/team/app:1.0",
        "my-instance-registry-vpc.cn-hangzhou.cr.aliyuncs.com/team/app",
        "registry.cn-hangzhou.aliyuncs.com/ns/app:1.0",
        "registry-vpc.cn-shanghai.aliyuncs.com/ns/app",
        "registry-intl.ap-southeast-1.aliyuncs.com/ns/app",
        "registry-intl-vpc.ap-southeast-1.aliyuncs.com/ns/app",
        "crpi-abc123def456.cn-hangzhou.personal.cr.aliyuncs.com/ns/app",
        "crpi-abc123def456-vpc.cn-hangzhou.personal.cr.aliyuncs.com/ns/app",
    ] {
        assert_eq!(matches(image), 1, "{image}: {patterns:?}");
    }
    for image in [
        "registry.cn-hangzhou.aliyuncs.com.evil.test/ns/app",
        "x-registry.cn-hangzhou.cr.aliyuncs.com.attacker/app",
        "oss-cn-hangzhou.aliyuncs.com/x",
        "ecs.cn-hangzhou.aliyuncs.com/x",
        "cr.cn-hangzhou.aliyuncs.com/x",
        "sts.aliyuncs.com/x",
        "evil.registry.cn-hangzhou.aliyuncs.com/ns/app",
        "registry.example.com/app",
        "nginx:1.27",
    ] {
        assert_eq!(matches(image), 0, "{image}: {patterns:?}");
    }
}

/// Quotes, backslashes and `$` survive the trip through YAML; the drop-in names its directory.
/// oidc: tokenAttributes without --service-account, its options in the entry, the registries
/// file beside the kubelet config (EKS: the service-account config, which nodeadm leaves alone).
#[test]
fn exact_yaml_for_oidc() {
    assert_eq!(
        init_ok(&[
            "--provider",
            "oidc",
            "--platform",
            "eks",
            "--match-images",
            "oidc=quay.io,*.jfrog.io",
            "--oidc-audience",
            "registry.acme.internal",
            "--oidc-cache-type",
            "ServiceAccount",
            "--oidc-required-annotation",
            "example.com/registry-role",
            "--oidc-optional-annotation",
            "quay.io/federated-robot-account",
        ]),
        r#"# Kubelet flags:
#   --image-credential-provider-config=/etc/eks/image-credential-provider/config-service-account.yaml
#   --image-credential-provider-bin-dir=/etc/eks/image-credential-provider
# Nodes need RBAC verb request-serviceaccounts-token-audience on each serviceAccountTokenAudience.
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: oidc-credential-provider
    matchImages:
      - "quay.io"
      - "*.jfrog.io"
    defaultCacheDuration: "5m"
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args:
      - "--config=/etc/eks/image-credential-provider/oidc-registries.yaml"
    tokenAttributes:
      serviceAccountTokenAudience: "registry.acme.internal"
      cacheType: ServiceAccount
      requireServiceAccount: true
      requiredServiceAccountAnnotationKeys:
        - "example.com/registry-role"
      optionalServiceAccountAnnotationKeys:
        - "quay.io/federated-robot-account"
"#
    );
}

/// Each platform keeps the registries file beside its kubelet config; --oidc-config wins.
#[test]
fn oidc_registries_file_per_platform() {
    for (platform, file) in [
        ("generic", "/etc/kubernetes/oidc-registries.yaml"),
        ("kind", "/etc/kubernetes/oidc-registries.yaml"),
        (
            "eks",
            "/etc/eks/image-credential-provider/oidc-registries.yaml",
        ),
        ("aks", "/var/lib/kubelet/oidc-registries.yaml"),
        ("gke", "/etc/srv/kubernetes/oidc-registries.yaml"),
        (
            "k3s",
            "/var/lib/rancher/credentialprovider/oidc-registries.yaml",
        ),
        (
            "rke2",
            "/var/lib/rancher/credentialprovider/oidc-registries.yaml",
        ),
        ("aks-windows", r"C:\k\oidc-registries.yaml"),
        ("eks-windows", r"C:\k\oidc-registries.yaml"),
    ] {
        let text = init_ok(&[&["--provider", "oidc", "--platform", platform], OIDC].concat());
        // YAML double quotes: a Windows path's backslashes are escaped.
        let want = format!(
            "    args:\n      - \"--config={}\"\n",
            file.replace('\\', "\\\\")
        );
        assert!(text.contains(&want), "{platform}: {text}");
    }
    let text = init_ok(
        &[
            &["--provider", "oidc", "--oidc-config", "/srv/r.json"],
            OIDC,
        ]
        .concat(),
    );
    assert!(
        text.contains("      - \"--config=/srv/r.json\"\n"),
        "{text}"
    );
}

/// The skeleton: one entry per host, every protocol commented out, naming the file it is for;
/// it needs no audience, and the unedited skeleton is refused by validate (pick a protocol).
#[test]
fn registries_skeleton_lists_every_protocol_per_host() {
    let text = init_ok(&[
        "--provider",
        "oidc",
        "--match-images",
        "oidc=quay.io,cgr.dev",
        "--registries-skeleton",
    ]);
    let block = r#"    # --- the service-account token itself is the password
    # protocol: passthrough
    # username: "jwt"
    # --- OAuth 2.0 token exchange (RFC 8693), e.g. Keycloak
    # protocol: token-exchange
    # endpoint: "https://sso.example.com/realms/REALM/protocol/openid-connect/token"
    # username: "oauth2"
    # # audience: "registry"
    # # scope: ""
    # # clientId: ""
    # # clientSecretFile: "/etc/kubernetes/oidc-client-secret"
    # --- JFrog Artifactory OIDC integration (endpoint default: https://<host>)
    # protocol: jfrog
    # providerName: "INTEGRATION"
    # # projectKey: ""
    # --- Quay robot account federation (default: the robot account named by the ServiceAccount annotation quay.io/federated-robot-account)
    # protocol: quay-robot
    # # robotAccount: "ORG+ROBOT"
    # --- Cloudsmith OIDC service account
    # protocol: cloudsmith
    # organization: "ORG"
    # serviceSlug: "SERVICE"
    # --- Chainguard assumable identity
    # protocol: chainguard
    # identity: "IDENTITY-ID"
    # --- IBM Cloud IAM trusted profile, for icr.io (IKS and ROKS clusters only)
    # protocol: ibm-iam
    # profileId: "Profile-ID"
    # # profileName: "NAME"  # instead of profileId
"#;
    assert_eq!(
        text,
        format!(
            "# Registries file for oidc-credential-provider: save it as /etc/kubernetes/oidc-registries.yaml (its --config).\n# In each entry keep ONE protocol block, uncomment it and fill in its values\n# (docs/providers/oidc.md); then check it: credential-provider-check validate.\nregistries:\n  - host: \"quay.io\"\n{block}  - host: \"cgr.dev\"\n{block}"
        )
    );
    // Unedited, it is refused where it is checked.
    let dir = TempDir::new("init-skeleton");
    let registries = dir.path().join("registries.yaml");
    std::fs::write(&registries, &text).unwrap();
    let config = dir.path().join("config.yaml");
    let entry = init_ok(&[
        "--provider",
        "oidc",
        "--match-images",
        "oidc=quay.io,cgr.dev",
        "--oidc-audience",
        "quay.io",
        "--oidc-config",
        registries.to_str().unwrap(),
    ]);
    std::fs::write(&config, entry).unwrap();
    let run = common::validate(&config);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let errors = common::messages(&run.json(), "argumentErrors");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("registries[0] (host \"quay.io\"): missing field \"protocol\""),
        "{errors:?}"
    );
}

#[test]
fn exact_yaml_for_a_static_drop_in() {
    let text = init_ok(&[
        "--provider",
        "static",
        "--static-registry",
        "harbor.example.com, *.harbor.example.com",
        "--static-username",
        r#"robot"$puller\x"#,
        "--static-password-file",
        "/etc/kubernetes/harbor-password",
        "--env",
        "static=NO_PROXY=a,b",
        "--cache-duration",
        "90s",
        "--drop-in",
    ]);
    assert_eq!(
        text,
        r#"# Kubelet flags:
#   --image-credential-provider-config=/etc/kubernetes/credential-providers.d (a directory: kubelet >= 1.34)
#   --image-credential-provider-bin-dir=/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: static-credential-provider
    matchImages:
      - "harbor.example.com"
      - "*.harbor.example.com"
    defaultCacheDuration: "90s"
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args:
      - "--registry=harbor.example.com,*.harbor.example.com"
      - "--username=robot\"$puller\\x"
      - "--password-file=/etc/kubernetes/harbor-password"
    env:
      - name: "NO_PROXY"
        value: "a,b"
"#
    );
    let dir = TempDir::new("init-static");
    let p = load_text(&dir, "static.yaml", &text);
    assert_eq!(p[0].args[1], r#"--username=robot"$puller\x"#);
}

const PLATFORMS: [&str; 10] = [
    "generic",
    "eks",
    "eks-hybrid",
    "aks",
    "gke",
    "k3s",
    "rke2",
    "kind",
    "aks-windows",
    "eks-windows",
];
const PROVIDERS: [&str; 6] = ["ecr", "acr", "gcr", "static", "oidc", "alibaba"];
const OIDC: &[&str] = &[
    "--match-images",
    "oidc=registry.acme.internal,harbor.acme.internal",
    "--oidc-audience",
    "registry.acme.internal",
];

/// The options a provider needs besides `--provider` (gcr's and alibaba's identity only in
/// service-account mode).
fn needs(provider: &str, platform: &str, sa: bool) -> Vec<&'static str> {
    match provider {
        "gcr" if sa && platform == "gke" => GKE_IDENTITY.to_vec(),
        "gcr" if sa => WIF.to_vec(),
        "static" if platform.ends_with("-windows") => STATIC_WINDOWS.to_vec(),
        "static" => STATIC.to_vec(),
        "oidc" => OIDC.to_vec(),
        "alibaba" if sa => ALIBABA_RRSA.to_vec(),
        _ => Vec::new(),
    }
}

/// Every provider alone and all six together, on every platform, with and without service
/// accounts, as YAML and as JSON: the kubelet reads the same providers from both, accepts them
/// with no warning, the four providers with optional per-pod identities carry tokenAttributes
/// in service-account mode, and oidc always (it has nothing else to trade).
#[test]
fn every_provider_platform_and_mode_validates_clean() {
    let dir = TempDir::new("init-matrix");
    let mut checked = 0;
    for platform in PLATFORMS {
        for sa in [false, true] {
            let sets: Vec<Vec<&str>> = PROVIDERS
                .iter()
                .map(|p| vec![*p])
                .chain(std::iter::once(PROVIDERS.to_vec()))
                .collect();
            for set in sets {
                let mut args = vec![
                    "--provider".to_owned(),
                    set.join(","),
                    "--platform".into(),
                    platform.into(),
                ];
                if sa {
                    args.push("--service-account".into());
                }
                for p in &set {
                    args.extend(needs(p, platform, sa).iter().map(|s| (*s).to_owned()));
                }
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let what = args.join(" ");
                let yaml = init_ok(&args);
                let json = init_ok(&[args.as_slice(), &["--format", "json"]].concat());
                serde_json::from_str::<serde_json::Value>(&json)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let path = dir.path().join("c.yaml");
                std::fs::write(&path, &yaml).unwrap();
                let config = assert_clean(&path, &what);
                assert_eq!(
                    load_text(&dir, "c.json", &json),
                    load(&path),
                    "{what}: YAML and JSON"
                );
                let names: Vec<&str> = config.providers.iter().map(|p| p.name.as_str()).collect();
                let want: Vec<String> = set
                    .iter()
                    .map(|p| format!("{p}-credential-provider"))
                    .collect();
                assert_eq!(names, want, "{what}");
                for p in &config.providers {
                    if p.name == "oidc-credential-provider" {
                        let t = p.token_attributes.as_ref().unwrap();
                        assert_eq!(t.audience, "registry.acme.internal", "{what}");
                        assert_eq!(t.cache_type, "Token", "{what}");
                        assert_eq!(t.require_service_account, Some(true), "{what}");
                        assert!(
                            t.required_keys.is_empty() && t.optional_keys.is_empty(),
                            "{what}"
                        );
                        continue;
                    }
                    let token = sa && p.name != "static-credential-provider";
                    assert_eq!(p.token_attributes.is_some(), token, "{what}: {}", p.name);
                    if let Some(t) = &p.token_attributes {
                        assert_eq!(t.cache_type, "ServiceAccount", "{what}");
                        assert_eq!(t.require_service_account, Some(false), "{what}");
                        assert!(
                            t.required_keys.is_empty() && !t.optional_keys.is_empty(),
                            "{what}"
                        );
                    }
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, PLATFORMS.len() * 2 * 7);
}

/// Each platform's paths, in the flags on top of the YAML.
#[test]
fn each_platform_names_its_paths() {
    for (platform, sa, config, bin) in [
        (
            "generic",
            false,
            "/etc/kubernetes/credential-provider-config.yaml",
            "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec",
        ),
        (
            "kubeadm",
            false,
            "/etc/kubernetes/credential-provider-config.yaml",
            "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec",
        ),
        (
            "eks",
            false,
            "/etc/eks/image-credential-provider/config.json",
            "/etc/eks/image-credential-provider",
        ),
        (
            "eks",
            true,
            "/etc/eks/image-credential-provider/config-service-account.yaml",
            "/etc/eks/image-credential-provider",
        ),
        (
            "aks",
            false,
            "/var/lib/kubelet/credential-provider-config.yaml",
            "/var/lib/kubelet/credential-provider",
        ),
        (
            "gke",
            false,
            "/etc/srv/kubernetes/cri_auth_config.yaml",
            "/home/kubernetes/bin",
        ),
        (
            "k3s",
            true,
            "/var/lib/rancher/credentialprovider/config.yaml",
            "/var/lib/rancher/credentialprovider/bin",
        ),
        (
            "rke2",
            false,
            "/var/lib/rancher/credentialprovider/config.yaml",
            "/var/lib/rancher/credentialprovider/bin",
        ),
        (
            "kind",
            false,
            "/etc/kubernetes/credential-provider-config.yaml",
            "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec",
        ),
        (
            "aks-windows",
            false,
            r"C:\k\credential-provider-config.yaml",
            r"C:\k\credential-provider",
        ),
        (
            "eks-windows",
            true,
            r"C:\k\credential-provider-config.yaml",
            r"C:\k\credential-provider",
        ),
    ] {
        let mut args = vec!["--provider", "ecr", "--platform", platform];
        if sa {
            args.push("--service-account");
        }
        let text = init_ok(&args);
        let head: Vec<&str> = text.lines().take(3).collect();
        assert_eq!(
            head,
            [
                "# Kubelet flags:".to_owned(),
                format!("#   --image-credential-provider-config={config}"),
                format!("#   --image-credential-provider-bin-dir={bin}"),
            ],
            "{platform}"
        );
    }
    // Given paths win over the platform's.
    let text = init_ok(&[
        "--provider",
        "ecr",
        "--platform",
        "gke",
        "--bin-dir",
        "/opt/bin",
        "--config-path",
        "/etc/x.yaml",
    ]);
    assert!(text.starts_with(
        "# Kubelet flags:\n#   --image-credential-provider-config=/etc/x.yaml\n#   --image-credential-provider-bin-dir=/opt/bin\n"
    ));
}

/// Windows platforms: ACR reads `C:\k\azure.json`, paths are absolute in Windows spelling and a
/// Linux path is refused with one line.
#[test]
fn windows_platforms_speak_windows_paths() {
    let text = init_ok(&["--provider", "acr", "--platform", "aks-windows"]);
    assert!(
        text.ends_with("    args:\n      - \"C:\\\\k\\\\azure.json\"\n"),
        "{text}"
    );
    for path in [r"D:\bin", "D:/bin", r"\\server\share\bin"] {
        init_ok(&[
            "--provider",
            "ecr",
            "--platform",
            "eks-windows",
            "--bin-dir",
            path,
        ]);
    }
    for (platform, path, want) in [
        (
            "eks-windows",
            "/opt/bin",
            "credential-provider-check: --bin-dir must be an absolute Windows path (C:\\...), got \"/opt/bin\"\n",
        ),
        (
            "eks-windows",
            "bin",
            "credential-provider-check: --bin-dir must be an absolute Windows path (C:\\...), got \"bin\"\n",
        ),
        (
            "eks",
            r"C:\bin",
            "credential-provider-check: --bin-dir must be an absolute path, got \"C:\\\\bin\"\n",
        ),
    ] {
        let run = init(&[
            "--provider",
            "ecr",
            "--platform",
            platform,
            "--bin-dir",
            path,
        ]);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (2, "", want),
            "{platform} {path}"
        );
    }
}

/// Every option scripts/install has offered shapes the entry as it always did.
#[test]
fn options_shape_the_entries() {
    let dir = TempDir::new("init-options");
    let text = init_ok(&[
        "--provider",
        "ecr,acr",
        "--cache-duration",
        "2h",
        "--match-images",
        "ecr=123456789012.dkr.ecr.us-east-1.amazonaws.com, public.ecr.aws",
        "--arg=ecr=--strict-hosts",
        "--arg",
        "ecr=-v",
        "--env",
        "ecr=HTTPS_PROXY=http://proxy:3128",
        "--env",
        "ecr=EMPTY=",
        "--azure-config",
        "/etc/azure/cloud.json",
        "--acr-registry-mirror",
        "registry.local:5000=myregistry.azurecr.io",
        "--api-version",
        "v1beta1",
    ]);
    assert!(
        text.contains("\napiVersion: kubelet.config.k8s.io/v1beta1\n"),
        "{text}"
    );
    let [ecr, acr] = <[Provider; 2]>::try_from(load_text(&dir, "c.yaml", &text)).unwrap();
    assert_eq!(
        ecr.match_images,
        [
            "123456789012.dkr.ecr.us-east-1.amazonaws.com",
            "public.ecr.aws"
        ]
    );
    assert_eq!(ecr.args, ["get-credentials", "--strict-hosts", "-v"]);
    assert_eq!(
        ecr.env,
        [
            ("HTTPS_PROXY".to_owned(), "http://proxy:3128".to_owned()),
            ("EMPTY".to_owned(), String::new())
        ]
    );
    assert_eq!(ecr.api_version, "credentialprovider.kubelet.k8s.io/v1beta1");
    assert_eq!(ecr.default_cache_duration.unwrap().to_string(), "2h0m0s");
    assert_eq!(
        acr.args,
        [
            "/etc/azure/cloud.json",
            "--registry-mirror=registry.local:5000=myregistry.azurecr.io"
        ]
    );
    assert_eq!(acr.match_images.last().unwrap(), "registry.local:5000");
    assert_eq!(acr.default_cache_duration.unwrap().to_string(), "2h0m0s");

    // gcr on GKE: the audience is the workload pool, unless given.
    let gcr = |extra: &[&str]| {
        let args = [
            &["--provider", "gcr", "--service-account"],
            GKE_IDENTITY,
            extra,
        ]
        .concat();
        let p = load_text(&dir, "g.yaml", &init_ok(&args));
        p[0].token_attributes.clone().unwrap().audience
    };
    assert_eq!(gcr(&[]), "my-project.svc.id.goog");
    assert_eq!(gcr(&["--gcr-token-audience", "custom"]), "custom");
    // --provider repeated, and a repeat folded, as scripts/install folds it.
    let p = load_text(
        &dir,
        "r.yaml",
        &init_ok(&["--provider", "gcr", "--provider", "ecr,gcr"]),
    );
    let names: Vec<&str> = p.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["gcr-credential-provider", "ecr-credential-provider"]
    );
}

/// Fleet mode (issue #30): the shared identity goes to ecr's and acr's args, last before `--arg`,
/// and to no other provider (gcr's metadata server is node-local); the config still validates.
#[test]
fn shared_identity_goes_to_ecr_and_acr_only() {
    let dir = TempDir::new("init-shared-identity");
    let text = init_ok(&[
        "--provider",
        "ecr,acr,gcr",
        "--token-cache-shared-identity",
        "nodes",
        "--arg",
        "ecr=--strict-hosts",
    ]);
    let path = dir.path().join("c.yaml");
    std::fs::write(&path, &text).unwrap();
    let providers = assert_clean(&path, "fleet config").providers;
    let args: Vec<(&str, Vec<&str>)> = providers
        .iter()
        .map(|p| (p.name.as_str(), p.args.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(
        args,
        [
            (
                "ecr-credential-provider",
                vec![
                    "get-credentials",
                    "--token-cache-shared-identity=nodes",
                    "--strict-hosts"
                ]
            ),
            (
                "acr-credential-provider",
                vec![
                    "/etc/kubernetes/azure.json",
                    "--token-cache-shared-identity=nodes"
                ]
            ),
            ("gcr-credential-provider", vec!["get-credentials"]),
        ]
    );
    let explained = init(&[
        "--provider",
        "ecr,acr,gcr",
        "--token-cache-shared-identity",
        "nodes",
        "--explain",
    ]);
    assert_eq!(explained.code, 0, "{}", explained.stderr);
    assert!(
        explained.stderr.lines().any(|l| l
            == "fleet mode: ecr-credential-provider, acr-credential-provider use the shared identity nodes: the fleet DaemonSet's wait copies the token controller's entries into their token cache; without them they fetch on their own (docs/install.md, Fleet mode)"),
        "{}",
        explained.stderr
    );
}

/// ecr with EKS Pod Identity: the provider's flag in args and the audience EKS Auth accepts, on
/// any platform; the role annotation stays forwarded (it still wins over the association).
#[test]
fn ecr_pod_identity_writes_its_flag_and_audience() {
    let dir = TempDir::new("init-pod-identity");
    for (platform, args) in [
        ("eks", vec!["--eks-pod-identity-cluster=prod"]),
        (
            "generic",
            vec!["get-credentials", "--eks-pod-identity-cluster=prod"],
        ),
    ] {
        let text = init_ok(&[
            "--provider",
            "ecr",
            "--platform",
            platform,
            "--service-account",
            "--ecr-eks-pod-identity-cluster",
            "prod",
        ]);
        let [ecr] = <[Provider; 1]>::try_from(load_text(&dir, "p.yaml", &text)).unwrap();
        assert_eq!(ecr.args, args, "{platform}");
        let t = ecr.token_attributes.unwrap();
        assert_eq!(
            (
                t.audience.as_str(),
                t.cache_type.as_str(),
                t.require_service_account
            ),
            ("pods.eks.amazonaws.com", "ServiceAccount", Some(false)),
            "{platform}"
        );
        assert_eq!(t.optional_keys, ["eks.amazonaws.com/ecr-role-arn"]);
        assert!(t.required_keys.is_empty());
    }
}

/// ecr's own role annotation key replaces the default in args and in the forwarded keys, with or
/// without Pod Identity.
#[test]
fn ecr_role_annotation_key_replaces_the_default() {
    let dir = TempDir::new("init-role-key");
    let text = init_ok(&[
        "--provider",
        "ecr",
        "--service-account",
        "--ecr-role-annotation-key",
        "example.com/ecr-role",
        "--ecr-role-annotation-key",
        "example.com/pull-role",
    ]);
    let [ecr] = <[Provider; 1]>::try_from(load_text(&dir, "k.yaml", &text)).unwrap();
    assert_eq!(
        ecr.args,
        [
            "get-credentials",
            "--role-annotation-key=example.com/ecr-role",
            "--role-annotation-key=example.com/pull-role"
        ]
    );
    let t = ecr.token_attributes.unwrap();
    assert_eq!(
        t.optional_keys,
        ["example.com/ecr-role", "example.com/pull-role"]
    );
    assert_eq!(t.audience, "sts.amazonaws.com");
    let text = init_ok(&[
        "--provider",
        "ecr",
        "--platform",
        "eks",
        "--service-account",
        "--ecr-eks-pod-identity-cluster",
        "prod",
        "--ecr-role-annotation-key",
        "example.com/ecr-role",
    ]);
    let [ecr] = <[Provider; 1]>::try_from(load_text(&dir, "kp.yaml", &text)).unwrap();
    assert_eq!(
        ecr.args,
        [
            "--eks-pod-identity-cluster=prod",
            "--role-annotation-key=example.com/ecr-role"
        ]
    );
    let t = ecr.token_attributes.unwrap();
    assert_eq!(t.optional_keys, ["example.com/ecr-role"]);
    assert_eq!(t.audience, "pods.eks.amazonaws.com");
}

/// A drop-in is read by the kubelet as one file of a directory: next to a platform's own file it
/// adds its providers after the platform's.
#[test]
fn drop_ins_join_a_config_directory() {
    let dir = TempDir::new("init-drop-in");
    let conf_d = dir.path().join("conf.d");
    std::fs::create_dir(&conf_d).unwrap();
    std::fs::copy(
        configs_dir().join("real/aks.yaml"),
        conf_d.join("10-aks.yaml"),
    )
    .unwrap();
    let text = init_ok(&[
        "--provider",
        "ecr,gcr",
        "--drop-in",
        "--config-path",
        "/etc/kubernetes/conf.d",
    ]);
    assert!(text.contains(
        "#   --image-credential-provider-config=/etc/kubernetes/conf.d (a directory: kubelet >= 1.34)\n"
    ));
    std::fs::write(conf_d.join("50-kubelet-credential-providers.yaml"), &text).unwrap();
    let config = assert_clean(&conf_d, "conf.d");
    assert!(config.directory);
    let names: Vec<&str> = config.providers.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "acr-credential-provider",
            "ecr-credential-provider",
            "gcr-credential-provider"
        ]
    );

    // JSON drop-ins too; aks and gke point the kubelet at their own file, so the directory is named.
    let json = init_ok(&[
        "--provider",
        "acr",
        "--platform",
        "aks",
        "--drop-in",
        "--config-path",
        "/etc/k/d",
        "--format",
        "json",
    ]);
    assert!(json.starts_with('{'));
    let explained = init(&["--provider", "ecr", "--drop-in", "--explain"]);
    assert_eq!(explained.code, 0);
    assert!(
        explained
            .stderr
            .contains("a provider name may appear in only one of them"),
        "{}",
        explained.stderr
    );
}

/// The failure contract for options: exit 2, one line on stderr, nothing on stdout.
#[test]
fn bad_options_exit_2_with_one_line_and_no_config() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "--provider"),
        (
            &["--provider", "quay"],
            "invalid value 'quay' for '--provider <PROVIDER>' [possible values: ecr, acr, gcr, static, oidc, alibaba]",
        ),
        (
            &["--provider", "ecr", "--platform", "openshift"],
            "invalid value 'openshift' for '--platform",
        ),
        (
            &["--provider", "ecr", "--format", "toml"],
            "invalid value 'toml'",
        ),
        (
            &["--provider", "ecr", "--api-version", "v2"],
            "invalid value 'v2'",
        ),
        (
            &["--provider", "ecr", "--bogus"],
            "unexpected argument '--bogus'",
        ),
        (
            &["--provider", "static"],
            "static needs --static-registry, --static-username and --static-password-file",
        ),
        (
            &[
                "--provider",
                "static",
                "--static-registry",
                " , ",
                "--static-username",
                "u",
                "--static-password-file",
                "/p",
            ],
            "--static-registry is empty",
        ),
        (
            &[
                "--provider",
                "static",
                "--static-registry",
                "r",
                "--static-username",
                "u",
                "--static-password-file",
                "p",
            ],
            "--static-password-file must be an absolute path, got \"p\"",
        ),
        (
            &["--provider", "ecr", "--static-username", "u"],
            "--static-* options apply only to --provider static",
        ),
        (
            &["--provider", "gcr", "--service-account"],
            "gcr with --service-account needs --gcr-identity-provider and --gcr-project-id (GKE), or --gcr-wif-audience",
        ),
        (
            &[
                "--provider",
                "gcr",
                "--service-account",
                "--gcr-project-id",
                "p",
            ],
            "gcr with --service-account needs",
        ),
        (
            &[
                "--provider",
                "gcr",
                "--service-account",
                "--gcr-wif-audience",
                "//x",
                "--gcr-project-id",
                "p",
            ],
            "use either --gcr-wif-audience or --gcr-identity-provider/--gcr-project-id, not both",
        ),
        (
            &[
                "--provider",
                "gcr",
                "--service-account",
                "--gcr-wif-audience",
                "iam.googleapis.com/x",
            ],
            "--gcr-wif-audience must look like //iam.googleapis.com/",
        ),
        (
            &["--provider", "ecr", "--gcr-project-id", "p"],
            "--gcr-* identity options only apply to gcr with --service-account",
        ),
        (
            &["--provider", "gcr", "--gcr-project-id", "p"],
            "--gcr-* identity options only apply to gcr with --service-account",
        ),
        (
            &[
                "--provider",
                "ecr",
                "--service-account",
                "--api-version",
                "v1beta1",
            ],
            "--service-account needs --api-version v1 (tokenAttributes exist only in v1)",
        ),
        (
            &["--provider", "oidc", "--oidc-audience", "a"],
            "oidc needs --match-images oidc=HOSTS: the registry hosts of its registries file (there is no default)",
        ),
        (
            &["--provider", "oidc", "--match-images", "oidc=quay.io"],
            "oidc needs --oidc-audience AUD: the service-account token audience its registries (or token endpoint) expect",
        ),
        (
            &[
                "--provider",
                "oidc",
                "--match-images",
                "oidc=quay.io",
                "--oidc-audience",
                "a",
                "--api-version",
                "v1beta1",
            ],
            "oidc needs --api-version v1: it trades the pod's service-account token, and tokenAttributes exist only in v1",
        ),
        (
            &[
                "--provider",
                "oidc",
                "--match-images",
                "oidc=quay.io",
                "--oidc-audience",
                "a",
                "--oidc-config",
                "registries.yaml",
            ],
            "--oidc-config must be an absolute path, got \"registries.yaml\"",
        ),
        (
            &["--provider", "ecr", "--oidc-audience", "a"],
            "--oidc-* options and --registries-skeleton apply only to --provider oidc",
        ),
        (
            &["--provider", "ecr", "--registries-skeleton"],
            "--oidc-* options and --registries-skeleton apply only to --provider oidc",
        ),
        (
            &["--provider", "ecr", "--cache-duration", "1d"],
            "--cache-duration must be a Go duration such as 12h, 10m or 90s, got \"1d\"",
        ),
        (
            &["--provider", "ecr", "--cache-duration=-1h"],
            "--cache-duration must not be negative",
        ),
        (
            &["--provider", "ecr", "--arg", "gcr=-v"],
            "--arg: options for gcr given, but gcr is not in --provider",
        ),
        (
            &["--provider", "ecr", "--arg", "v"],
            "--arg expects PROVIDER=VALUE",
        ),
        (
            &["--provider", "ecr", "--arg", "quay=-v"],
            "--arg: unknown provider \"quay\"",
        ),
        (
            &["--provider", "ecr", "--arg", "ecr=a\nb"],
            "--arg must not contain a line break",
        ),
        (
            &["--provider", "ecr", "--env", "ecr=1X=y"],
            "--env expects PROVIDER=NAME=VALUE, got \"ecr=1X=y\"",
        ),
        (
            &["--provider", "ecr", "--env", "ecr=NOVALUE"],
            "--env expects PROVIDER=NAME=VALUE",
        ),
        (
            &["--provider", "ecr", "--match-images", "ecr=,"],
            "--match-images ecr= is empty",
        ),
        (
            &["--provider", "ecr", "--bin-dir", "relative"],
            "--bin-dir must be an absolute path, got \"relative\"",
        ),
        (
            &["--provider", "ecr", "--config-path", "c.yaml"],
            "--config-path must be an absolute path",
        ),
        (
            &["--provider", "acr", "--azure-config", "azure.json"],
            "--azure-config must be an absolute path",
        ),
        (
            &["--provider", "ecr", "--azure-config", "/a.json"],
            "--azure-config and --acr-registry-mirror apply only to --provider acr",
        ),
        (
            &[
                "--provider",
                "acr",
                "--acr-registry-mirror",
                "mcr.microsoft.com",
            ],
            "--acr-registry-mirror expects SOURCE:LOGIN-SERVER",
        ),
        (
            &["--provider", "ecr", "--ecr-registry-mirror", "docker.io"],
            "--ecr-registry-mirror expects SOURCE:REGISTRY",
        ),
        (
            &[
                "--provider",
                "ecr",
                "--ecr-assume-role",
                "12345=arn:aws:iam::123456789012:role/x",
            ],
            "--ecr-assume-role expects ACCOUNT=ROLE_ARN",
        ),
        (
            &[
                "--provider",
                "ecr",
                "--ecr-assume-role-external-id",
                "tenant-42",
            ],
            "--ecr-assume-role-external-id needs --ecr-assume-role",
        ),
        (
            &[
                "--provider",
                "ecr",
                "--ecr-eks-pod-identity-cluster",
                "prod",
            ],
            "--ecr-eks-pod-identity-cluster needs --service-account",
        ),
        (
            &[
                "--provider",
                "ecr",
                "--ecr-role-annotation-key",
                "example.com/ecr-role",
            ],
            "--ecr-role-annotation-key needs --service-account",
        ),
        (
            &[
                "--provider",
                "gcr",
                "--ecr-role-annotation-key",
                "example.com/ecr-role",
            ],
            "--ecr-* options apply only to --provider ecr",
        ),
        (
            &[
                "--provider",
                "ecr",
                "--service-account",
                "--ecr-eks-pod-identity-cluster",
                "arn:aws:eks:us-west-2:123456789012:cluster/prod",
            ],
            "is not an EKS cluster name",
        ),
        (
            &[
                "--provider",
                "acr",
                "--service-account",
                "--ecr-eks-pod-identity-cluster",
                "prod",
            ],
            "--ecr-* options apply only to --provider ecr",
        ),
        (
            &["--provider", "acr", "--acr-ib-apiserver-ip", "10.0.0.1"],
            "--acr-ib-* options need --acr-ib-sni-name (ib-sni-name must be set)",
        ),
        (
            &["--provider", "acr", "--acr-ib-sni-name", "ib.example.com"],
            "--acr-ib-sni-name needs --provider acr and --service-account",
        ),
        (
            &[
                "--provider",
                "acr",
                "--ecr-registry-mirror",
                "docker.io:123456789012.dkr.ecr.us-west-2.amazonaws.com",
            ],
            "--ecr-* options apply only to --provider ecr",
        ),
        (
            &[
                "--provider",
                "acr",
                "--service-account",
                "--acr-ib-sni-name",
                "ib.example.com",
            ],
            "--acr-ib-sni-name needs --acr-ib-apiserver-ip (ib-apiserver-ip must be set)",
        ),
        (
            &[
                "--provider",
                "acr",
                "--service-account",
                "--acr-ib-sni-name",
                "https://ib.example.com",
                "--acr-ib-apiserver-ip",
                "10.0.0.1",
            ],
            "must not contain protocol prefix",
        ),
        (
            &[
                "--provider",
                "acr",
                "--service-account",
                "--acr-ib-sni-name",
                "ib.example.com",
                "--acr-ib-apiserver-ip",
                "10.0.0.1",
                "--acr-ib-ca-file",
                "ca.crt",
            ],
            "--acr-ib-ca-file must be an absolute path",
        ),
        (
            &["--provider", "ecr", "--drop-in", "--platform", "k3s"],
            "--drop-in: k3s reads one config file",
        ),
        (
            &[
                "--provider",
                "ecr",
                "--drop-in",
                "--platform",
                "rke2",
                "--config-path",
                "/d",
            ],
            "--drop-in: rke2 reads one config file",
        ),
        (
            &["--provider", "gcr", "--drop-in", "--platform", "gke"],
            "--drop-in on gke needs --config-path DIR",
        ),
        (
            &["--provider", "ecr", "--output", "json"],
            "init prints a config, not a report: choose its format with --format json",
        ),
        (
            &[
                "--provider",
                "gcr,static",
                "--static-registry",
                "r",
                "--static-username",
                "u",
                "--static-password-file",
                "/p",
                "--token-cache-shared-identity",
                "nodes",
            ],
            "--token-cache-shared-identity applies to ecr and acr only: gcr's metadata server is node-local, static and oidc fetch nothing with the node's identity",
        ),
        (
            &[
                "--provider",
                "ecr",
                "--token-cache-shared-identity",
                "Nodes",
            ],
            "--token-cache-shared-identity: shared identity \"Nodes\" is not a name: use 1 to 63 lowercase letters, digits, '-' or '.', starting and ending with a letter or digit",
        ),
        (
            &["--provider", "ecr", "--token-cache-shared-identity", ""],
            "--token-cache-shared-identity: shared identity \"\" is not a name: use 1 to 63 lowercase letters, digits, '-' or '.', starting and ending with a letter or digit",
        ),
        (
            &[
                "--provider",
                "ecr",
                "--token-cache-shared-identity",
                "nodes-",
            ],
            "--token-cache-shared-identity: shared identity \"nodes-\" is not a name: use 1 to 63 lowercase letters, digits, '-' or '.', starting and ending with a letter or digit",
        ),
        (
            &["--provider", "alibaba", "--service-account"],
            "alibaba with --service-account needs --alibaba-oidc-provider-arn acs:ram::ACCOUNT:oidc-provider/NAME",
        ),
        (
            &[
                "--provider",
                "alibaba",
                "--alibaba-oidc-provider-arn",
                "acs:ram::1234567890123456:oidc-provider/c",
            ],
            "--alibaba-oidc-provider-arn needs --service-account: RRSA trades the pod's service-account token",
        ),
        (
            &[
                "--provider",
                "alibaba",
                "--service-account",
                "--alibaba-oidc-provider-arn",
                "acs:ram::1234567890123456:role/puller",
            ],
            "--alibaba-oidc-provider-arn must look like acs:ram::ACCOUNT:oidc-provider/NAME, got \"acs:ram::1234567890123456:role/puller\"",
        ),
        (
            &[
                "--provider",
                "alibaba",
                "--alibaba-instance",
                "https://registry.example.com=cri-abc",
            ],
            "--alibaba-instance expects HOST=cri-ID (a registry host name and an Enterprise Edition instance ID), got \"https://registry.example.com=cri-abc\"",
        ),
        (
            &[
                "--provider",
                "ecr",
                "--alibaba-instance",
                "registry.example.com=cri-abc",
            ],
            "--alibaba-* options apply only to --provider alibaba",
        ),
    ];
    for (args, why) in cases {
        let run = init(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.starts_with("credential-provider-check: ") && run.stderr.contains(why),
            "{args:?}: {}",
            run.stderr
        );
    }
}

/// What the options ask for, but the kubelet would refuse: exit 1, its message on one line, and
/// no config.
#[test]
fn a_config_the_kubelet_would_refuse_is_never_printed() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--provider", "ecr", "--match-images", "ecr=a b"],
            r#"providers.matchImages: Invalid value: "a b": match image is invalid: parse "https://a b": invalid character " " in host name"#,
        ),
        (
            &[
                "--provider",
                "gcr",
                "--service-account",
                "--gcr-wif-audience",
                "//x",
                "--gcr-token-audience",
                "",
            ],
            "providers.tokenAttributes.serviceAccountTokenAudience: Required value",
        ),
        (
            &[
                "--provider",
                "static",
                "--static-registry",
                "r.example.com:port",
                "--static-username",
                "u",
                "--static-password-file",
                "/p",
            ],
            "providers.matchImages: Invalid value: \"r.example.com:port\"",
        ),
    ];
    for (args, why) in cases {
        let run = init(args);
        assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.starts_with(
                "credential-provider-check: init: the kubelet would refuse this config: failed to validate credential provider config: "
            ) && run.stderr.contains(why),
            "{args:?}: {}",
            run.stderr
        );
    }
}

/// An `--arg` the provider itself would refuse (issue #25): the kubelet would start, but every
/// exec would fail, so the config is not printed either.
#[test]
fn args_the_provider_refuses_are_never_printed() {
    let run = init(&["--provider", "ecr", "--arg", "ecr=--strict-host"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "credential-provider-check: init: ecr-credential-provider: args: unknown flag --strict-host (did you mean --strict-hosts?); ecr-credential-provider refuses its arguments and exits 2 on every exec\n"
    );
}

/// stdout is the config and only the config; `--explain` and warnings go to stderr.
#[test]
fn stdout_holds_only_the_config() {
    let plain = init_ok(&["--provider", "ecr,acr", "--service-account"]);
    let explained = init(&["--provider", "ecr,acr", "--service-account", "--explain"]);
    assert_eq!(explained.code, 0);
    assert_eq!(
        explained.stdout, plain,
        "--explain must not change the config"
    );
    let lines: Vec<&str> = explained.stderr.lines().collect();
    assert_eq!(
        lines[..4],
        [
            "Kubelet flags:",
            "  --image-credential-provider-config=/etc/kubernetes/credential-provider-config.yaml",
            "  --image-credential-provider-bin-dir=/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec",
            "Nodes need RBAC verb request-serviceaccounts-token-audience on each serviceAccountTokenAudience.",
        ]
    );
    for want in [
        "Platform generic: put both flags in KUBELET_EXTRA_ARGS",
        "token audience: sts.amazonaws.com (ecr-credential-provider)",
        "token audience: api://AzureADTokenExchange (acr-credential-provider)",
        "file read at run time: /etc/kubernetes/azure.json (acr-credential-provider)",
        "note: ecr-credential-provider: tokenAttributes needs the KubeletServiceAccountTokenForCredentialProviders gate",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(want)),
            "{want}: {}",
            explained.stderr
        );
    }
    assert!(lines.iter().all(|l| !l.is_empty()));

    // JSON has no comments: the flags are only on stderr, and stdout is one JSON document.
    let json = init(&[
        "--provider",
        "ecr",
        "--platform",
        "eks",
        "--format",
        "json",
        "--explain",
    ]);
    assert_eq!(json.code, 0);
    json.json();
    assert!(
        json.stderr
            .contains("  --image-credential-provider-bin-dir=/etc/eks/image-credential-provider\n")
    );
    assert!(
        json.stderr
            .contains("Platform eks: nodeadm sets both flags")
    );

    // What the kubelet accepts but can never work: printed, with a warning on stderr.
    let warned = init(&[
        "--provider",
        "ecr",
        "--match-images",
        "ecr=https://r.example.com",
    ]);
    assert_eq!(warned.code, 0);
    assert!(
        warned
            .stdout
            .contains("      - \"https://r.example.com\"\n")
    );
    assert_eq!(warned.stderr.lines().count(), 1, "{}", warned.stderr);
    assert!(warned.stderr.starts_with(
        "warning: ecr-credential-provider: matchImages entry \"https://r.example.com\" has a scheme"
    ));

    // --help is an answer, not an error.
    let help = init(&["--help"]);
    assert_eq!(help.code, 0);
    assert!(
        help.stdout.contains("--platform <PLATFORM>"),
        "{}",
        help.stdout
    );
    assert_eq!(help.stderr, "");
}

/// `--profile` is `--platform` by another name (`init --profile eks-hybrid`, as nodeadm's users
/// say it): the same config, byte for byte.
#[test]
fn profile_is_another_name_for_platform() {
    for platform in ["eks-hybrid", "eks", "generic"] {
        assert_eq!(
            init_ok(&["--provider", "ecr", "--profile", platform]),
            init_ok(&["--provider", "ecr", "--platform", platform]),
            "{platform}"
        );
    }
}
