//! `init`: the one source of this project's provider defaults. It owns, as typed data, what each
//! provider's `CredentialProviderConfig` entry looks like on each platform (names, `matchImages`,
//! `defaultCacheDuration`, `args`, `tokenAttributes`) and where each platform keeps the binaries
//! and the config, and it prints a config built from them.
//!
//! The document is built once ([`Document`]) and written as JSON (serde) or as a small
//! deterministic YAML (every free-form value double-quoted). Before anything is printed the text is
//! decoded back with the kubelet's strict decoder, compared with the data it came from, and run
//! through the kubelet's validation rules: `init` never prints a config the kubelet would refuse.
//! `scripts/install` and the examples in `testdata/configs/` both come from here.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use kcp_kubelet::duration::GoDuration;
use kcp_kubelet_emulation::config::{self, Config, Provider, TokenAttributes};
use kcp_kubelet_emulation::validate;
use serde::Serialize;

use crate::{CommandError, usage};

/// A provider of this project, as `--provider` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderKind {
    /// Amazon ECR and ECR Public.
    Ecr,
    /// Azure Container Registry.
    Acr,
    /// Google Artifact Registry and Container Registry.
    Gcr,
    /// Any registry with a fixed user and password file.
    Static,
}

impl ProviderKind {
    /// The short name used in `P=VALUE` options.
    fn short(self) -> &'static str {
        match self {
            ProviderKind::Ecr => "ecr",
            ProviderKind::Acr => "acr",
            ProviderKind::Gcr => "gcr",
            ProviderKind::Static => "static",
        }
    }

    /// The binary's file name, which the kubelet requires as the provider's `name`.
    pub fn binary(self) -> &'static str {
        match self {
            ProviderKind::Ecr => "ecr-credential-provider",
            ProviderKind::Acr => "acr-credential-provider",
            ProviderKind::Gcr => "gcr-credential-provider",
            ProviderKind::Static => "static-credential-provider",
        }
    }
}

/// Where the node comes from: decides the paths, the flags' home and a few provider defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Platform {
    /// kubeadm, Cluster API and other self-managed nodes.
    #[value(
        alias = "kubeadm",
        alias = "cluster-api",
        alias = "capi",
        alias = "self-managed"
    )]
    Generic,
    /// Amazon EKS, Amazon Linux 2023 nodes bootstrapped by nodeadm.
    Eks,
    /// Azure AKS (AgentBaker node layout).
    Aks,
    /// Google GKE (COS or Ubuntu nodes).
    Gke,
    /// k3s.
    K3s,
    /// RKE2.
    Rke2,
    /// kind (Kubernetes in Docker; kubeadm inside each node container).
    Kind,
    /// AKS Windows node pools (`.exe` binaries, `C:\k\azure.json`).
    AksWindows,
    /// EKS Windows node pools (`.exe` binaries).
    EksWindows,
}

/// The output format of the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DocFormat {
    /// YAML, with the kubelet flags as comments on top.
    Yaml,
    /// JSON (no comments: see `--explain`).
    Json,
}

/// The `apiVersion` for the config and its providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApiVersion {
    /// kubelet 1.26+; the only one with `tokenAttributes`.
    V1,
    /// kubelet 1.24 and 1.25.
    V1beta1,
    /// kubelet 1.20 to 1.23.
    V1alpha1,
}

impl ApiVersion {
    fn name(self) -> &'static str {
        match self {
            ApiVersion::V1 => "v1",
            ApiVersion::V1beta1 => "v1beta1",
            ApiVersion::V1alpha1 => "v1alpha1",
        }
    }
}

/// `credential-provider-check init`: its options. Every option of `scripts/install` that shapes
/// the config has the same name here, so the script passes them through unchanged.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Providers to configure, in config order: ecr, acr, gcr, static (repeatable or comma-separated).
    #[arg(
        long = "provider",
        visible_alias = "providers",
        value_name = "PROVIDER",
        value_enum,
        value_delimiter = ',',
        required = true
    )]
    providers: Vec<ProviderKind>,
    /// The node's platform: its paths, where the kubelet flags go, and its provider defaults.
    #[arg(long, value_enum, default_value = "generic")]
    platform: Platform,
    /// Per-pod identities (KEP-4412 tokenAttributes; kubelet 1.34+) for ecr, acr and gcr.
    #[arg(long)]
    service_account: bool,
    /// The config's format.
    #[arg(long, value_enum, default_value = "yaml")]
    format: DocFormat,
    /// A drop-in for a kubelet 1.34+ config directory (the flag then names the directory).
    #[arg(long)]
    drop_in: bool,
    /// Also print on stderr the kubelet flags, where the platform sets them, and what to check.
    #[arg(long)]
    explain: bool,
    /// The kubelet's --image-credential-provider-bin-dir (default: the platform's).
    #[arg(long, value_name = "DIR", value_parser = one_line("--bin-dir"))]
    bin_dir: Option<String>,
    /// The kubelet's --image-credential-provider-config: the file, or with --drop-in the directory
    /// (default: the platform's).
    #[arg(long, value_name = "PATH", value_parser = one_line("--config-path"))]
    config_path: Option<String>,
    /// Every provider's defaultCacheDuration, a Go duration (default per provider: ecr 12h, acr
    /// 10m, gcr 1m, static 1h).
    #[arg(long, value_name = "D", value_parser = one_line("--cache-duration"))]
    cache_duration: Option<String>,
    /// The config's and providers' apiVersion: v1, v1beta1 (kubelet 1.24-1.25), v1alpha1 (1.20-1.23).
    #[arg(long, value_name = "V", value_enum, default_value = "v1")]
    api_version: ApiVersion,
    /// Replace provider P's matchImages with a comma-separated list of globs (repeatable).
    #[arg(long, value_name = "P=LIST", value_parser = provider_value("--match-images"))]
    match_images: Vec<(ProviderKind, String)>,
    /// Append ARG to provider P's args, e.g. ecr=--strict-hosts (repeatable).
    #[arg(long = "arg", value_name = "P=ARG", value_parser = provider_value("--arg"))]
    args: Vec<(ProviderKind, String)>,
    /// Add NAME=VALUE to provider P's env, e.g. ecr=HTTPS_PROXY=http://proxy:3128 (repeatable).
    #[arg(long, value_name = "P=NAME=VALUE", value_parser = provider_value("--env"))]
    env: Vec<(ProviderKind, String)>,
    /// acr's cloud config, its first argument (default /etc/kubernetes/azure.json; on the Windows
    /// platforms C:\k\azure.json).
    #[arg(long, value_name = "FILE", value_parser = one_line("--azure-config"))]
    azure_config: Option<String>,
    /// acr: a registry mirrored into ACR, SOURCE:LOGIN-SERVER (HOST:PORT=LOGIN-SERVER with a port);
    /// adds --registry-mirror=VALUE to args and SOURCE to matchImages (repeatable).
    #[arg(long, value_name = "SOURCE:LOGIN-SERVER", value_parser = one_line("--acr-registry-mirror"))]
    acr_registry_mirror: Vec<String>,
    /// ecr: a registry mirrored into ECR (e.g. a pull-through cache), SOURCE:REGISTRY with an ECR
    /// private registry host (HOST:PORT=REGISTRY with a port); adds --registry-mirror=VALUE to
    /// args and SOURCE to matchImages (repeatable; the provider then refuses unlisted hosts).
    #[arg(long, value_name = "SOURCE:REGISTRY", value_parser = one_line("--ecr-registry-mirror"))]
    ecr_registry_mirror: Vec<String>,
    /// ecr: pull from ACCOUNT's registries as ROLE_ARN, assumed with the node's credentials;
    /// adds --assume-role=VALUE to args (repeatable).
    #[arg(long, value_name = "ACCOUNT=ROLE_ARN", value_parser = one_line("--ecr-assume-role"))]
    ecr_assume_role: Vec<String>,
    /// ecr: the ExternalId sent with every --ecr-assume-role call.
    #[arg(long, value_name = "ID", value_parser = one_line("--ecr-assume-role-external-id"))]
    ecr_assume_role_external_id: Option<String>,
    /// ecr with --service-account: pull as each ServiceAccount's EKS Pod Identity association in
    /// cluster NAME (adds --eks-pod-identity-cluster=NAME; the token audience becomes
    /// pods.eks.amazonaws.com).
    #[arg(long, value_name = "NAME", value_parser = one_line("--ecr-eks-pod-identity-cluster"))]
    ecr_eks_pod_identity_cluster: Option<String>,
    /// ecr with --service-account: the ServiceAccount annotation naming the role, instead of
    /// eks.amazonaws.com/ecr-role-arn (adds --role-annotation-key=KEY to args and KEY to the
    /// forwarded annotation keys; repeatable, the first present wins).
    #[arg(long, value_name = "KEY", value_parser = one_line("--ecr-role-annotation-key"))]
    ecr_role_annotation_key: Vec<String>,
    /// acr with --service-account on AKS: turn on identity bindings, naming the TLS name of the
    /// cluster's identity-bindings endpoint (adds --ib-sni-name; the token audience becomes
    /// api://AKSIdentityBinding, as AKS configures it).
    #[arg(long, value_name = "NAME", value_parser = one_line("--acr-ib-sni-name"))]
    acr_ib_sni_name: Option<String>,
    /// acr identity bindings: the API server's address, IP or host name[:PORT] (--ib-apiserver-ip).
    #[arg(long, value_name = "ADDRESS", value_parser = one_line("--acr-ib-apiserver-ip"))]
    acr_ib_apiserver_ip: Option<String>,
    /// acr identity bindings: the client ID for unannotated service accounts (--ib-default-client-id).
    #[arg(long, value_name = "ID", value_parser = one_line("--acr-ib-default-client-id"))]
    acr_ib_default_client_id: Option<String>,
    /// acr identity bindings: the tenant for unannotated service accounts (--ib-default-tenant-id).
    #[arg(long, value_name = "ID", value_parser = one_line("--acr-ib-default-tenant-id"))]
    acr_ib_default_tenant_id: Option<String>,
    /// acr identity bindings: the cluster CA, when not the platform's (--ib-ca-file).
    #[arg(long, value_name = "FILE", value_parser = one_line("--acr-ib-ca-file"))]
    acr_ib_ca_file: Option<String>,
    /// gcr with --service-account on GKE: the cluster's identity provider URL.
    #[arg(long, value_name = "URL", value_parser = one_line("--gcr-identity-provider"))]
    gcr_identity_provider: Option<String>,
    /// gcr with --service-account on GKE: the project ID (token audience ID.svc.id.goog).
    #[arg(long, value_name = "ID", value_parser = one_line("--gcr-project-id"))]
    gcr_project_id: Option<String>,
    /// gcr with --service-account elsewhere, the WIF provider (token audience https:AUD):
    /// //iam.googleapis.com/projects/N/locations/global/workloadIdentityPools/POOL/providers/PROV
    #[arg(long, value_name = "AUD", value_parser = one_line("--gcr-wif-audience"))]
    gcr_wif_audience: Option<String>,
    /// gcr's service-account token audience, replacing the one derived above.
    #[arg(long, value_name = "AUD", value_parser = one_line("--gcr-token-audience"))]
    gcr_token_audience: Option<String>,
    /// static's registries: comma-separated globs.
    #[arg(long, value_name = "LIST", value_parser = one_line("--static-registry"))]
    static_registry: Option<String>,
    /// static's user name.
    #[arg(long, value_name = "USER", value_parser = one_line("--static-username"))]
    static_username: Option<String>,
    /// static's password file (absolute: the kubelet's working directory is not yours).
    #[arg(long, value_name = "FILE", value_parser = one_line("--static-password-file"))]
    static_password_file: Option<String>,
}

/// A value must be one line: it ends up in the kubelet's argv, and a comment or a message.
fn one_line(option: &'static str) -> impl Fn(&str) -> Result<String, String> + Clone {
    move |value: &str| {
        if value.contains(['\n', '\r']) {
            Err(format!("{option} must not contain a line break"))
        } else {
            Ok(value.to_owned())
        }
    }
}

/// `PROVIDER=VALUE`, with PROVIDER one of ours.
fn provider_value(
    option: &'static str,
) -> impl Fn(&str) -> Result<(ProviderKind, String), String> + Clone {
    move |text: &str| {
        let text = one_line(option)(text)?;
        let (p, value) = text
            .split_once('=')
            .ok_or_else(|| format!("{option} expects PROVIDER=VALUE, got {text:?}"))?;
        let provider = ProviderKind::from_str(p, false)
            .map_err(|_| format!("{option}: unknown provider {p:?} (ecr, acr, gcr, static)"))?;
        Ok((provider, value.to_owned()))
    }
}

// ---------------------------------------------------------------------------------------------
// The defaults: one row per provider x platform (`provider_defaults`), one per platform.

/// What a platform decides about paths and who sets the kubelet flags.
#[derive(Debug)]
struct PlatformDefaults {
    /// The name `--platform` takes.
    name: &'static str,
    /// `--image-credential-provider-bin-dir`.
    bin_dir: &'static str,
    /// `--image-credential-provider-config` for node credentials.
    config: &'static str,
    /// `--image-credential-provider-config` in service-account mode (EKS: nodeadm owns the other).
    config_service_account: &'static str,
    /// The config directory a drop-in goes to, if the platform has an obvious one.
    drop_in_dir: Option<&'static str>,
    /// Why the platform cannot read a config directory at all, if it cannot.
    no_drop_in: Option<&'static str>,
    /// Where the two flags are set on this platform (one line).
    flags_home: &'static str,
    /// Windows nodes: paths are `C:\...`, binaries `<name>.exe`.
    windows: bool,
}

const KUBEADM_FLAGS: &str = "put both flags in KUBELET_EXTRA_ARGS (/etc/default/kubelet or /etc/sysconfig/kubelet) or in kubeadm's nodeRegistration.kubeletExtraArgs (Cluster API: the KubeadmConfig), then restart the kubelet";
const RANCHER_BIN: &str = "/var/lib/rancher/credentialprovider/bin";
const RANCHER_CONFIG: &str = "/var/lib/rancher/credentialprovider/config.yaml";
const RANCHER_NO_DROP_IN: &str = "reads one config file (/var/lib/rancher/credentialprovider/config.yaml, which must be a regular file), not a directory";
const GENERIC_BIN: &str = "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec";
const GENERIC_CONFIG: &str = "/etc/kubernetes/credential-provider-config.yaml";
const GENERIC_DROP_IN: &str = "/etc/kubernetes/credential-providers.d";
/// Windows nodes: no upstream default for our binaries, so ours, beside the kubelet's own files
/// under `C:\k` (where AKS keeps `azure.json`).
const WINDOWS_BIN: &str = r"C:\k\credential-provider";
const WINDOWS_CONFIG: &str = r"C:\k\credential-provider-config.yaml";
const WINDOWS_FLAGS: &str = "add both flags to the kubelet's arguments where the node starts it (its Windows service or start-up script), then Restart-Service kubelet; the kubelet runs <name>.exe from the bin dir, so the config names each provider without .exe";
const AKS_WINDOWS: PlatformDefaults = windows_platform("aks-windows");
const EKS_WINDOWS: PlatformDefaults = windows_platform("eks-windows");

/// A Windows node pool: the same paths and flags whatever the cloud.
const fn windows_platform(name: &'static str) -> PlatformDefaults {
    PlatformDefaults {
        name,
        bin_dir: WINDOWS_BIN,
        config: WINDOWS_CONFIG,
        config_service_account: WINDOWS_CONFIG,
        drop_in_dir: None,
        no_drop_in: None,
        flags_home: WINDOWS_FLAGS,
        windows: true,
    }
}

/// The platform table.
fn platform_defaults(platform: Platform) -> &'static PlatformDefaults {
    match platform {
        Platform::Generic => &PlatformDefaults {
            name: "generic",
            bin_dir: GENERIC_BIN,
            config: GENERIC_CONFIG,
            config_service_account: GENERIC_CONFIG,
            drop_in_dir: Some(GENERIC_DROP_IN),
            no_drop_in: None,
            flags_home: KUBEADM_FLAGS,
            windows: false,
        },
        Platform::Eks => &PlatformDefaults {
            name: "eks",
            bin_dir: "/etc/eks/image-credential-provider",
            config: "/etc/eks/image-credential-provider/config.json",
            config_service_account: "/etc/eks/image-credential-provider/config-service-account.yaml",
            drop_in_dir: None,
            no_drop_in: None,
            flags_home: "nodeadm sets both flags (config: /etc/eks/image-credential-provider/config.json, rewritten at every boot); for a config elsewhere add its --image-credential-provider-config to the NodeConfig's spec.kubelet.flags (appended after nodeadm's; the kubelet keeps the last)",
            windows: false,
        },
        Platform::Aks => &PlatformDefaults {
            name: "aks",
            bin_dir: "/var/lib/kubelet/credential-provider",
            config: "/var/lib/kubelet/credential-provider-config.yaml",
            config_service_account: "/var/lib/kubelet/credential-provider-config.yaml",
            drop_in_dir: None,
            no_drop_in: None,
            flags_home: "AgentBaker sets both flags; node image upgrades reset the binary and the config, so install from a privileged DaemonSet or your node bootstrap, then restart the kubelet",
            windows: false,
        },
        Platform::Gke => &PlatformDefaults {
            name: "gke",
            bin_dir: "/home/kubernetes/bin",
            config: "/etc/srv/kubernetes/cri_auth_config.yaml",
            config_service_account: "/etc/srv/kubernetes/cri_auth_config.yaml",
            drop_in_dir: None,
            no_drop_in: None,
            flags_home: "GKE sets both flags and rewrites the config when it recreates a node: apply it from a privileged DaemonSet or a node image, then restart the kubelet",
            windows: false,
        },
        Platform::K3s => &PlatformDefaults {
            name: "k3s",
            bin_dir: RANCHER_BIN,
            config: RANCHER_CONFIG,
            config_service_account: RANCHER_CONFIG,
            drop_in_dir: None,
            no_drop_in: Some(RANCHER_NO_DROP_IN),
            flags_home: "k3s sets both flags itself when the bin directory exists and config.yaml is a regular file: restart k3s (or k3s-agent)",
            windows: false,
        },
        Platform::Rke2 => &PlatformDefaults {
            name: "rke2",
            bin_dir: RANCHER_BIN,
            config: RANCHER_CONFIG,
            config_service_account: RANCHER_CONFIG,
            drop_in_dir: None,
            no_drop_in: Some(RANCHER_NO_DROP_IN),
            flags_home: "RKE2 sets both flags itself when the bin directory exists and config.yaml is a regular file: restart rke2-server (or rke2-agent)",
            windows: false,
        },
        Platform::Kind => &PlatformDefaults {
            name: "kind",
            bin_dir: GENERIC_BIN,
            config: GENERIC_CONFIG,
            config_service_account: GENERIC_CONFIG,
            drop_in_dir: Some(GENERIC_DROP_IN),
            no_drop_in: None,
            flags_home: "mount the binaries and the config into every node (extraMounts) and pass both flags in kubeadmConfigPatches (nodeRegistration.kubeletExtraArgs of InitConfiguration and JoinConfiguration); kind nodes have no cloud identity, so give each provider credentials (e.g. --env ecr=AWS_SHARED_CREDENTIALS_FILE=..., --arg gcr=--json-key=...)",
            windows: false,
        },
        Platform::AksWindows => &AKS_WINDOWS,
        Platform::EksWindows => &EKS_WINDOWS,
    }
}

/// Where a provider's `matchImages` come from.
#[derive(Debug)]
enum ImagesDefault {
    /// A fixed list.
    Fixed(&'static [&'static str]),
    /// `--static-registry`.
    StaticRegistry,
}

/// One default argument.
#[derive(Debug)]
enum ArgDefault {
    /// As is.
    Literal(&'static str),
    /// ACR's cloud config path (a positional argument), replaced by `--azure-config`.
    AzureConfig(&'static str),
    /// `--registry=` and the `--static-registry` list.
    StaticRegistry,
    /// `--username=` and `--static-username`.
    StaticUsername,
    /// `--password-file=` and `--static-password-file`.
    StaticPasswordFile,
    /// gcr's service-account identity flags (only with `--service-account`).
    GcrIdentity,
}

/// Where a provider's service-account token audience comes from.
#[derive(Debug)]
enum AudienceDefault {
    /// A fixed audience.
    Fixed(&'static str),
    /// From the `--gcr-*` identity options.
    GcrIdentity,
}

/// `tokenAttributes` in service-account mode.
#[derive(Debug)]
struct TokenDefaults {
    audience: AudienceDefault,
    /// `ServiceAccount`: the registry token depends only on the ServiceAccount, and outlives the
    /// pod's token.
    cache_type: &'static str,
    /// `false`: pods that did not opt in, and static pods, keep pulling with the node's identity.
    require_service_account: bool,
    optional_keys: &'static [&'static str],
}

/// One provider's entry on one platform.
#[derive(Debug)]
struct ProviderDefaults {
    match_images: ImagesDefault,
    cache_duration: &'static str,
    args: &'static [ArgDefault],
    /// `None`: the provider has no per-pod identity.
    token: Option<TokenDefaults>,
}

/// EKS AL2023 nodeadm's 13 patterns, in its order.
const ECR_IMAGES: &[&str] = &[
    "*.dkr.ecr.*.amazonaws.com",
    "*.dkr-ecr.*.on.aws",
    "*.dkr.ecr.*.amazonaws.com.cn",
    "*.dkr-ecr.*.on.amazonwebservices.com.cn",
    "*.dkr.ecr-fips.*.amazonaws.com",
    "*.dkr-ecr-fips.*.on.aws",
    "*.dkr.ecr.*.c2s.ic.gov",
    "*.dkr.ecr.*.sc2s.sgov.gov",
    "*.dkr.ecr.*.cloud.adc-e.uk",
    "*.dkr.ecr.*.csp.hci.ic.gov",
    "*.dkr.ecr.*.amazonaws.eu",
    "public.ecr.aws",
    "ecr-public.aws.com",
];
/// Every cloud's ACR suffix, and geo-replica endpoints (two more labels).
const ACR_IMAGES: &[&str] = &[
    "*.azurecr.io",
    "*.azurecr.cn",
    "*.azurecr.de",
    "*.azurecr.us",
    "*.*.*.azurecr.io",
];
const GCR_IMAGES: &[&str] = &[
    "container.cloud.google.com",
    "gcr.io",
    "*.gcr.io",
    "*.pkg.dev",
];

const ECR_TOKEN: TokenDefaults = TokenDefaults {
    audience: AudienceDefault::Fixed("sts.amazonaws.com"),
    cache_type: "ServiceAccount",
    require_service_account: false,
    optional_keys: &["eks.amazonaws.com/ecr-role-arn"],
};
/// ECR with EKS Pod Identity: the audience EKS Auth accepts. The role annotation stays listed:
/// an annotated ServiceAccount still pulls as its annotated role.
const ECR_POD_IDENTITY_TOKEN: TokenDefaults = TokenDefaults {
    audience: AudienceDefault::Fixed("pods.eks.amazonaws.com"),
    ..ECR_TOKEN
};

/// The ECR entry everywhere but EKS.
const ECR: ProviderDefaults = ProviderDefaults {
    match_images: ImagesDefault::Fixed(ECR_IMAGES),
    cache_duration: "12h",
    args: &[ArgDefault::Literal("get-credentials")],
    token: Some(ECR_TOKEN),
};
/// The ECR entry as nodeadm writes it on EKS AL2023 (no args; Go's duration spelling).
const ECR_EKS: ProviderDefaults = ProviderDefaults {
    match_images: ImagesDefault::Fixed(ECR_IMAGES),
    cache_duration: "12h0m0s",
    args: &[],
    token: Some(ECR_TOKEN),
};
const ACR_TOKEN: TokenDefaults = TokenDefaults {
    audience: AudienceDefault::Fixed("api://AzureADTokenExchange"),
    cache_type: "ServiceAccount",
    require_service_account: false,
    optional_keys: &[
        "kubernetes.azure.com/acr-client-id",
        "kubernetes.azure.com/acr-tenant-id",
    ],
};
/// ACR with identity bindings, as AgentBaker writes it: its own audience, and only the client ID
/// annotation (the endpoint takes no tenant).
const ACR_IB_TOKEN: TokenDefaults = TokenDefaults {
    audience: AudienceDefault::Fixed("api://AKSIdentityBinding"),
    cache_type: "ServiceAccount",
    require_service_account: false,
    optional_keys: &["kubernetes.azure.com/acr-client-id"],
};
/// The ACR entry; AKS (AgentBaker) passes the same azure.json path.
const ACR: ProviderDefaults = ProviderDefaults {
    match_images: ImagesDefault::Fixed(ACR_IMAGES),
    cache_duration: "10m",
    args: &[ArgDefault::AzureConfig("/etc/kubernetes/azure.json")],
    token: Some(ACR_TOKEN),
};
/// The ACR entry on Windows nodes, where AKS keeps azure.json in `C:\k`.
const ACR_WINDOWS: ProviderDefaults = ProviderDefaults {
    args: &[ArgDefault::AzureConfig(r"C:\k\azure.json")],
    ..ACR
};
const GCR: ProviderDefaults = ProviderDefaults {
    match_images: ImagesDefault::Fixed(GCR_IMAGES),
    cache_duration: "1m",
    args: &[
        ArgDefault::Literal("get-credentials"),
        ArgDefault::GcrIdentity,
    ],
    token: Some(TokenDefaults {
        audience: AudienceDefault::GcrIdentity,
        cache_type: "ServiceAccount",
        require_service_account: false,
        optional_keys: &[
            "iam.gke.io/enable-wi-image-pull",
            "iam.gke.io/gcp-service-account",
        ],
    }),
};
const STATIC: ProviderDefaults = ProviderDefaults {
    match_images: ImagesDefault::StaticRegistry,
    cache_duration: "1h",
    args: &[
        ArgDefault::StaticRegistry,
        ArgDefault::StaticUsername,
        ArgDefault::StaticPasswordFile,
    ],
    token: None,
};

/// The provider x platform table.
fn provider_defaults(provider: ProviderKind, platform: Platform) -> &'static ProviderDefaults {
    match (provider, platform) {
        (ProviderKind::Ecr, Platform::Eks) => &ECR_EKS,
        (ProviderKind::Ecr, _) => &ECR,
        (ProviderKind::Acr, Platform::AksWindows | Platform::EksWindows) => &ACR_WINDOWS,
        (ProviderKind::Acr, _) => &ACR,
        (ProviderKind::Gcr, _) => &GCR,
        (ProviderKind::Static, _) => &STATIC,
    }
}

// ---------------------------------------------------------------------------------------------
// The document.

const CONFIG_GROUP: &str = "kubelet.config.k8s.io";
const PROVIDER_GROUP: &str = "credentialprovider.kubelet.k8s.io";

/// A `CredentialProviderConfig`, fields in the order they are written.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    api_version: String,
    kind: &'static str,
    providers: Vec<Entry>,
}

/// One `providers[]` entry.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    name: &'static str,
    match_images: Vec<String>,
    default_cache_duration: String,
    api_version: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    args: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    env: Vec<EnvVar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token_attributes: Option<TokenAttrs>,
}

/// One `env` entry: `--env P=NAME=VALUE`.
#[derive(Debug, Serialize)]
struct EnvVar {
    name: String,
    value: String,
}

/// `tokenAttributes` as written (no required keys: every default is opt-in per ServiceAccount).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TokenAttrs {
    service_account_token_audience: String,
    cache_type: &'static str,
    require_service_account: bool,
    optional_service_account_annotation_keys: Vec<String>,
}

/// Comma-separated items, trimmed, empty ones dropped.
fn split_commas(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Paths in the config are the node's, absolute in its own spelling: `/...` on Linux, `C:\...`
/// (or `C:/...`, `\\server\share`) on Windows.
fn absolute(option: &str, path: &str, windows: bool) -> Result<(), CommandError> {
    let ok = if windows {
        let b = path.as_bytes();
        (b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/'))
            || path.starts_with(r"\\")
    } else {
        path.starts_with('/')
    };
    if ok {
        Ok(())
    } else if windows {
        usage(format!(
            "{option} must be an absolute Windows path (C:\\...), got {path:?}"
        ))
    } else {
        usage(format!("{option} must be an absolute path, got {path:?}"))
    }
}

/// gcr's service-account identity: its flags and the token audience.
struct GcrIdentity {
    args: Vec<String>,
    audience: String,
}

/// The options checked against each other, before any document is built.
struct Checked<'a> {
    providers: Vec<ProviderKind>,
    gcr: Option<GcrIdentity>,
    static_registry: Vec<String>,
    mirrors: Vec<(&'a str, String)>,
    /// ecr's mirrors, as `mirrors`.
    ecr_mirrors: Vec<(&'a str, String)>,
    /// acr's `--ib-*` args, when identity bindings are on.
    identity_bindings: Vec<String>,
}

impl InitArgs {
    fn selected(&self, p: ProviderKind) -> bool {
        self.providers.contains(&p)
    }

    /// Every rule about the options themselves; the kubelet's rules come after.
    fn check(&self) -> Result<Checked<'_>, CommandError> {
        let mut providers = Vec::new();
        for p in &self.providers {
            if !providers.contains(p) {
                providers.push(*p);
            }
        }
        for (option, values) in [
            ("--match-images", &self.match_images),
            ("--arg", &self.args),
            ("--env", &self.env),
        ] {
            for (p, _) in values {
                if !providers.contains(p) {
                    let p = p.short();
                    return usage(format!(
                        "{option}: options for {p} given, but {p} is not in --provider"
                    ));
                }
            }
        }
        for (p, list) in &self.match_images {
            if split_commas(list).is_empty() {
                return usage(format!("--match-images {}= is empty", p.short()));
            }
        }
        for (p, value) in &self.env {
            let name = value.split_once('=').map(|(n, _)| n).unwrap_or("");
            let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return usage(format!(
                    "--env expects PROVIDER=NAME=VALUE, got \"{}={value}\"",
                    p.short()
                ));
            }
        }
        if let Some(d) = &self.cache_duration {
            match GoDuration::parse(d) {
                Err(_) => {
                    return usage(format!(
                        "--cache-duration must be a Go duration such as 12h, 10m or 90s, got {d:?}"
                    ));
                }
                Ok(parsed) if parsed.is_negative() => {
                    return usage(format!("--cache-duration must not be negative, got {d:?}"));
                }
                Ok(_) => {}
            }
        }
        let windows = platform_defaults(self.platform).windows;
        if self.service_account && self.api_version != ApiVersion::V1 {
            return usage(
                "--service-account needs --api-version v1 (tokenAttributes exist only in v1)",
            );
        }
        for (option, path) in [
            ("--bin-dir", &self.bin_dir),
            ("--config-path", &self.config_path),
        ] {
            if let Some(path) = path {
                absolute(option, path, windows)?;
            }
        }
        let gcr = self.check_gcr()?;

        let static_options = [
            &self.static_registry,
            &self.static_username,
            &self.static_password_file,
        ];
        let mut static_registry = Vec::new();
        if self.selected(ProviderKind::Static) {
            let [Some(registry), Some(_), Some(password_file)] = static_options else {
                return usage(
                    "static needs --static-registry, --static-username and --static-password-file",
                );
            };
            absolute("--static-password-file", password_file, windows)?;
            static_registry = split_commas(registry);
            if static_registry.is_empty() {
                return usage("--static-registry is empty");
            }
        } else if static_options.iter().any(|o| o.is_some()) {
            return usage("--static-* options apply only to --provider static");
        }

        let mut mirrors = Vec::new();
        if self.selected(ProviderKind::Acr) {
            if let Some(path) = &self.azure_config {
                absolute("--azure-config", path, windows)?;
            }
            for value in &self.acr_registry_mirror {
                mirrors.push((
                    value.as_str(),
                    mirror_source("--acr-registry-mirror", "LOGIN-SERVER", value)?,
                ));
            }
        } else if self.azure_config.is_some() || !self.acr_registry_mirror.is_empty() {
            return usage("--azure-config and --acr-registry-mirror apply only to --provider acr");
        }
        let identity_bindings = self.check_identity_bindings(windows)?;

        let mut ecr_mirrors = Vec::new();
        if self.selected(ProviderKind::Ecr) {
            for value in &self.ecr_registry_mirror {
                ecr_mirrors.push((
                    value.as_str(),
                    mirror_source("--ecr-registry-mirror", "REGISTRY", value)?,
                ));
            }
            for value in &self.ecr_assume_role {
                // The provider checks the ARN in full at start; this catches the shape early.
                let ok = value.split_once('=').is_some_and(|(account, arn)| {
                    account.len() == 12
                        && account.bytes().all(|b| b.is_ascii_digit())
                        && arn.starts_with("arn:")
                        && arn.contains(":role/")
                });
                if !ok {
                    return usage(format!(
                        "--ecr-assume-role expects ACCOUNT=ROLE_ARN (a 12-digit account, arn:<partition>:iam::<account>:role/<name>), got {value:?}"
                    ));
                }
            }
            if self.ecr_assume_role_external_id.is_some() && self.ecr_assume_role.is_empty() {
                return usage("--ecr-assume-role-external-id needs --ecr-assume-role");
            }
            if !self.ecr_role_annotation_key.is_empty() && !self.service_account {
                return usage(
                    "--ecr-role-annotation-key needs --service-account: the kubelet forwards ServiceAccount annotations only with tokenAttributes",
                );
            }
            if let Some(cluster) = &self.ecr_eks_pod_identity_cluster {
                if !self.service_account {
                    return usage(
                        "--ecr-eks-pod-identity-cluster needs --service-account: EKS Pod Identity trades the pod's service-account token",
                    );
                }
                // The provider's own rule (providers/ecr/src/pod_identity.rs), so a printed
                // config never fails at the provider's start.
                let ok = (1..=100).contains(&cluster.len())
                    && cluster.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && cluster
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
                if !ok {
                    return usage(format!(
                        "--ecr-eks-pod-identity-cluster {cluster:?} is not an EKS cluster name (1-100 letters, digits, '-' or '_', starting with a letter or digit)"
                    ));
                }
            }
        } else if !self.ecr_registry_mirror.is_empty()
            || !self.ecr_assume_role.is_empty()
            || self.ecr_assume_role_external_id.is_some()
            || self.ecr_eks_pod_identity_cluster.is_some()
            || !self.ecr_role_annotation_key.is_empty()
        {
            return usage("--ecr-* options apply only to --provider ecr");
        }

        let platform = platform_defaults(self.platform);
        if self.drop_in {
            if let Some(why) = platform.no_drop_in {
                return usage(format!("--drop-in: {} {why}", platform.name));
            }
            if platform.drop_in_dir.is_none() && self.config_path.is_none() {
                return usage(format!(
                    "--drop-in on {} needs --config-path DIR: the platform points the kubelet at its own file, not a directory",
                    platform.name
                ));
            }
        }
        Ok(Checked {
            providers,
            gcr,
            static_registry,
            mirrors,
            ecr_mirrors,
            identity_bindings,
        })
    }

    /// The `--acr-ib-*` options, checked as the provider checks its `--ib-*` flags (so a config
    /// init prints never fails at the provider's start), as acr args.
    fn check_identity_bindings(&self, windows: bool) -> Result<Vec<String>, CommandError> {
        let others = [
            ("--ib-apiserver-ip", &self.acr_ib_apiserver_ip),
            ("--ib-default-client-id", &self.acr_ib_default_client_id),
            ("--ib-default-tenant-id", &self.acr_ib_default_tenant_id),
            ("--ib-ca-file", &self.acr_ib_ca_file),
        ];
        let Some(sni) = &self.acr_ib_sni_name else {
            if others.iter().any(|(_, v)| v.is_some()) {
                return usage(
                    "--acr-ib-* options need --acr-ib-sni-name (ib-sni-name must be set)",
                );
            }
            return Ok(Vec::new());
        };
        if !(self.selected(ProviderKind::Acr) && self.service_account) {
            return usage(
                "--acr-ib-sni-name needs --provider acr and --service-account: identity bindings trade the pod's service-account token",
            );
        }
        if sni.contains("://") || sni.is_empty() || sni.contains(['/', ':', ' ']) {
            return usage(format!(
                "--acr-ib-sni-name {sni:?}: give the host name only (it must not contain protocol prefix, port or path)"
            ));
        }
        if self
            .acr_ib_apiserver_ip
            .as_deref()
            .is_none_or(str::is_empty)
        {
            return usage(
                "--acr-ib-sni-name needs --acr-ib-apiserver-ip (ib-apiserver-ip must be set): the API server's address",
            );
        }
        if let Some(ca) = &self.acr_ib_ca_file {
            absolute("--acr-ib-ca-file", ca, windows)?;
        }
        let mut args = vec![format!("--ib-sni-name={sni}")];
        for (flag, value) in others {
            if let Some(value) = value {
                args.push(format!("{flag}={value}"));
            }
        }
        Ok(args)
    }

    fn check_gcr(&self) -> Result<Option<GcrIdentity>, CommandError> {
        let identity = &self.gcr_identity_provider;
        let project = &self.gcr_project_id;
        let wif = &self.gcr_wif_audience;
        if !(self.selected(ProviderKind::Gcr) && self.service_account) {
            if identity.is_some()
                || project.is_some()
                || wif.is_some()
                || self.gcr_token_audience.is_some()
            {
                return usage("--gcr-* identity options only apply to gcr with --service-account");
            }
            return Ok(None);
        }
        let (args, audience) = match (wif, identity, project) {
            (Some(wif), None, None) => {
                if !wif.starts_with("//") {
                    return usage(
                        "--gcr-wif-audience must look like //iam.googleapis.com/projects/N/locations/global/workloadIdentityPools/POOL/providers/PROV",
                    );
                }
                (
                    vec![format!("--wif-audience={wif}")],
                    format!("https:{wif}"),
                )
            }
            (Some(_), _, _) => {
                return usage(
                    "use either --gcr-wif-audience or --gcr-identity-provider/--gcr-project-id, not both",
                );
            }
            (None, Some(identity), Some(project)) => (
                vec![
                    format!("--identity-provider={identity}"),
                    format!("--project-id={project}"),
                ],
                format!("{project}.svc.id.goog"),
            ),
            (None, _, _) => {
                return usage(
                    "gcr with --service-account needs --gcr-identity-provider and --gcr-project-id (GKE), or --gcr-wif-audience",
                );
            }
        };
        Ok(Some(GcrIdentity {
            args,
            audience: self.gcr_token_audience.clone().unwrap_or(audience),
        }))
    }

    /// The kubelet's `--image-credential-provider-config` for this output.
    fn config_target(&self) -> String {
        let platform = platform_defaults(self.platform);
        if let Some(path) = &self.config_path {
            return path.clone();
        }
        let default = if self.drop_in {
            platform.drop_in_dir
        } else if self.service_account {
            Some(platform.config_service_account)
        } else {
            Some(platform.config)
        };
        default.unwrap_or(platform.config).to_owned()
    }

    fn bin_dir(&self) -> String {
        self.bin_dir
            .clone()
            .unwrap_or_else(|| platform_defaults(self.platform).bin_dir.to_owned())
    }

    /// Builds the document from the defaults table and the options.
    fn document(&self, checked: &Checked<'_>) -> Document {
        let provider_api = format!("{PROVIDER_GROUP}/{}", self.api_version.name());
        let providers = checked
            .providers
            .iter()
            .map(|&p| {
                let d = provider_defaults(p, self.platform);
                let mut match_images = match d.match_images {
                    ImagesDefault::Fixed(images) => {
                        images.iter().map(|s| (*s).to_owned()).collect()
                    }
                    ImagesDefault::StaticRegistry => checked.static_registry.clone(),
                };
                if let Some((_, list)) = self.match_images.iter().rev().find(|(q, _)| *q == p) {
                    match_images = split_commas(list);
                }
                let mut args = Vec::new();
                for arg in d.args {
                    match arg {
                        ArgDefault::Literal(s) => args.push((*s).to_owned()),
                        ArgDefault::AzureConfig(default) => args.push(
                            self.azure_config
                                .clone()
                                .unwrap_or_else(|| (*default).to_owned()),
                        ),
                        ArgDefault::StaticRegistry => {
                            args.push(format!("--registry={}", checked.static_registry.join(",")));
                        }
                        ArgDefault::StaticUsername => args.push(format!(
                            "--username={}",
                            self.static_username.as_deref().unwrap_or_default()
                        )),
                        ArgDefault::StaticPasswordFile => args.push(format!(
                            "--password-file={}",
                            self.static_password_file.as_deref().unwrap_or_default()
                        )),
                        ArgDefault::GcrIdentity => {
                            if let Some(gcr) = &checked.gcr {
                                args.extend(gcr.args.iter().cloned());
                            }
                        }
                    }
                }
                if p == ProviderKind::Ecr {
                    for (value, source) in &checked.ecr_mirrors {
                        args.push(format!("--registry-mirror={value}"));
                        if !match_images.contains(source) {
                            match_images.push(source.clone());
                        }
                    }
                    for value in &self.ecr_assume_role {
                        args.push(format!("--assume-role={value}"));
                    }
                    if let Some(id) = &self.ecr_assume_role_external_id {
                        args.push(format!("--assume-role-external-id={id}"));
                    }
                    if let Some(cluster) = &self.ecr_eks_pod_identity_cluster {
                        args.push(format!("--eks-pod-identity-cluster={cluster}"));
                    }
                    for key in &self.ecr_role_annotation_key {
                        args.push(format!("--role-annotation-key={key}"));
                    }
                }
                if p == ProviderKind::Acr {
                    args.extend(checked.identity_bindings.iter().cloned());
                    for (value, source) in &checked.mirrors {
                        args.push(format!("--registry-mirror={value}"));
                        if !match_images.contains(source) {
                            match_images.push(source.clone());
                        }
                    }
                }
                args.extend(
                    self.args
                        .iter()
                        .filter(|(q, _)| *q == p)
                        .map(|(_, a)| a.clone()),
                );
                let env = self
                    .env
                    .iter()
                    .filter(|(q, _)| *q == p)
                    .filter_map(|(_, e)| e.split_once('='))
                    .map(|(name, value)| EnvVar {
                        name: name.to_owned(),
                        value: value.to_owned(),
                    })
                    .collect();
                // Identity bindings: AKS's own tokenAttributes (AgentBaker); EKS Pod Identity its
                // own audience.
                let token = match &d.token {
                    Some(_) if p == ProviderKind::Acr && !checked.identity_bindings.is_empty() => {
                        Some(&ACR_IB_TOKEN)
                    }
                    Some(_)
                        if p == ProviderKind::Ecr
                            && self.ecr_eks_pod_identity_cluster.is_some() =>
                    {
                        Some(&ECR_POD_IDENTITY_TOKEN)
                    }
                    other => other.as_ref(),
                };
                let token_attributes = match token {
                    Some(t) if self.service_account => Some(TokenAttrs {
                        service_account_token_audience: match t.audience {
                            AudienceDefault::Fixed(a) => a.to_owned(),
                            AudienceDefault::GcrIdentity => checked
                                .gcr
                                .as_ref()
                                .map(|g| g.audience.clone())
                                .unwrap_or_default(),
                        },
                        cache_type: t.cache_type,
                        require_service_account: t.require_service_account,
                        // ecr's own keys replace the default one: a cluster that reserves it
                        // must not have it forwarded either.
                        optional_service_account_annotation_keys: if p == ProviderKind::Ecr
                            && !self.ecr_role_annotation_key.is_empty()
                        {
                            self.ecr_role_annotation_key.clone()
                        } else {
                            t.optional_keys.iter().map(|k| (*k).to_owned()).collect()
                        },
                    }),
                    _ => None,
                };
                Entry {
                    name: p.binary(),
                    match_images,
                    default_cache_duration: self
                        .cache_duration
                        .clone()
                        .unwrap_or_else(|| d.cache_duration.to_owned()),
                    api_version: provider_api.clone(),
                    args,
                    env,
                    token_attributes,
                }
            })
            .collect();
        Document {
            api_version: format!("{CONFIG_GROUP}/{}", self.api_version.name()),
            kind: config::CONFIG_KIND,
            providers,
        }
    }

    /// The lines written as YAML comments on top (and first with `--explain`): the kubelet flags.
    /// The same text `scripts/install` has always written, so an upgrade rewrites no config.
    fn header(&self, doc: &Document) -> Vec<String> {
        let mut lines = vec!["Kubelet flags:".to_owned()];
        let target = self.config_target();
        if self.drop_in {
            lines.push(format!(
                "  --image-credential-provider-config={target} (a directory: kubelet >= 1.34)"
            ));
        } else {
            lines.push(format!("  --image-credential-provider-config={target}"));
        }
        lines.push(format!(
            "  --image-credential-provider-bin-dir={}",
            self.bin_dir()
        ));
        if doc.providers.iter().any(|p| p.token_attributes.is_some()) {
            lines.push(
                "Nodes need RBAC verb request-serviceaccounts-token-audience on each serviceAccountTokenAudience."
                    .to_owned(),
            );
        }
        lines
    }

    /// `--explain`: the header, then where the platform sets the flags and what to check.
    fn explanation(&self, doc: &Document, v: &validate::Validation) -> Vec<String> {
        let platform = platform_defaults(self.platform);
        let mut lines = self.header(doc);
        lines.push(format!(
            "Platform {}: {}.",
            platform.name, platform.flags_home
        ));
        if self.drop_in {
            lines.push(
                "Drop-in: save it in that directory, e.g. as 50-kubelet-credential-providers.yaml; the kubelet reads every .json, .yaml and .yml file there in name order, and a provider name may appear in only one of them."
                    .to_owned(),
            );
        }
        for p in &doc.providers {
            if let Some(t) = &p.token_attributes {
                lines.push(format!(
                    "token audience: {} ({})",
                    t.service_account_token_audience, p.name
                ));
            }
        }
        for (path, provider) in runtime_files(doc) {
            lines.push(format!("file read at run time: {path} ({provider})"));
        }
        for n in &v.notes {
            lines.push(format!("note: {}", finding(n)));
        }
        lines
    }
}

/// What `install` needs from the options: the same defaults `init` prints, never a second copy.
// install runs on Linux only (install.rs).
#[cfg_attr(not(unix), allow(dead_code))]
impl InitArgs {
    /// The providers' binary file names, in config order, each once.
    pub fn binaries(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        for p in &self.providers {
            if !names.contains(&p.binary()) {
                names.push(p.binary());
            }
        }
        names
    }

    /// The kubelet's `--image-credential-provider-bin-dir` on the node.
    pub fn node_bin_dir(&self) -> String {
        self.bin_dir()
    }

    /// The kubelet's `--image-credential-provider-config` on the node (a directory with
    /// `--drop-in`).
    pub fn node_config_target(&self) -> String {
        self.config_target()
    }

    /// Whether the config is a drop-in for a config directory.
    pub fn drop_in(&self) -> bool {
        self.drop_in
    }

    /// Whether the config is YAML (the only format that can carry `install`'s marker comment).
    pub fn yaml(&self) -> bool {
        self.format == DocFormat::Yaml
    }

    /// Whether the platform's nodes run Windows.
    pub fn windows(&self) -> bool {
        platform_defaults(self.platform).windows
    }

    /// The platform's `--platform` name.
    pub fn platform_name(&self) -> &'static str {
        platform_defaults(self.platform).name
    }
}

/// A mirror's source host (with port, if given as `host:port=destination`), read with the
/// providers' own parser: one entry per option.
fn mirror_source(option: &str, destination: &str, value: &str) -> Result<String, CommandError> {
    match kcp_kubelet::mirror::parse_entry(value) {
        Some(mirror) => Ok(mirror.source),
        None => usage(format!(
            "{option} expects SOURCE:{destination} (or SOURCE:PORT={destination}), got {value:?}"
        )),
    }
}

/// Files a provider reads when a request arrives (not at kubelet start): acr's azure.json (and
/// the cluster CA with identity bindings), static's password file.
fn runtime_files(doc: &Document) -> Vec<(String, &'static str)> {
    let mut files = Vec::new();
    for p in &doc.providers {
        if p.name == ProviderKind::Acr.binary() {
            if let Some(first) = p.args.first().filter(|a| !a.starts_with('-')) {
                files.push((first.clone(), p.name));
            }
            // Identity bindings read the cluster CA (the provider's default unless named).
            if p.args.iter().any(|a| a.starts_with("--ib-sni-name=")) {
                let windows = p.args.first().is_some_and(|a| a.contains('\\'));
                let ca = p
                    .args
                    .iter()
                    .find_map(|a| a.strip_prefix("--ib-ca-file="))
                    .unwrap_or(if windows {
                        r"C:\k\ca.crt"
                    } else {
                        "/etc/kubernetes/certs/ca.crt"
                    });
                files.push((ca.to_owned(), p.name));
            }
        } else if p.name == ProviderKind::Static.binary() {
            for a in &p.args {
                if let Some(path) = a.strip_prefix("--password-file=") {
                    files.push((path.to_owned(), p.name));
                }
            }
        }
    }
    files
}

fn finding(f: &validate::Finding) -> String {
    match &f.provider {
        Some(p) => format!("{p}: {}", f.message),
        None => f.message.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// Writing.

/// A YAML double-quoted scalar: `\` and `"` escaped, control and line-separator characters as
/// escapes, everything else as is (YAML 1.1 and 1.2 read it the same, and so does JSON).
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}') => {
                out.push_str(&format!("\\u{:04X}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A scalar this module writes itself (names, apiVersions, cacheType): plain when it cannot be
/// read as anything but that string, quoted otherwise.
fn plain(s: &str) -> String {
    let safe = s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '/' | '_'))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        );
    if safe { s.to_owned() } else { quoted(s) }
}

fn yaml_list(out: &mut String, indent: &str, items: &[String]) {
    for item in items {
        out.push_str(indent);
        out.push_str("- ");
        out.push_str(&quoted(item));
        out.push('\n');
    }
}

/// The document as YAML, in the layout `scripts/install` has always written.
fn to_yaml(doc: &Document, header: &[String]) -> String {
    let mut out = String::new();
    for line in header {
        out.push_str(&format!("# {line}\n"));
    }
    out.push_str(&format!("apiVersion: {}\n", plain(&doc.api_version)));
    out.push_str(&format!("kind: {}\n", plain(doc.kind)));
    out.push_str("providers:\n");
    for p in &doc.providers {
        out.push_str(&format!("  - name: {}\n", plain(p.name)));
        out.push_str("    matchImages:\n");
        yaml_list(&mut out, "      ", &p.match_images);
        out.push_str(&format!(
            "    defaultCacheDuration: {}\n",
            quoted(&p.default_cache_duration)
        ));
        out.push_str(&format!("    apiVersion: {}\n", plain(&p.api_version)));
        if !p.args.is_empty() {
            out.push_str("    args:\n");
            yaml_list(&mut out, "      ", &p.args);
        }
        if !p.env.is_empty() {
            out.push_str("    env:\n");
            for e in &p.env {
                out.push_str(&format!(
                    "      - name: {}\n        value: {}\n",
                    quoted(&e.name),
                    quoted(&e.value)
                ));
            }
        }
        if let Some(t) = &p.token_attributes {
            out.push_str("    tokenAttributes:\n");
            out.push_str(&format!(
                "      serviceAccountTokenAudience: {}\n",
                quoted(&t.service_account_token_audience)
            ));
            out.push_str(&format!("      cacheType: {}\n", plain(t.cache_type)));
            out.push_str(&format!(
                "      requireServiceAccount: {}\n",
                t.require_service_account
            ));
            out.push_str("      optionalServiceAccountAnnotationKeys:\n");
            yaml_list(
                &mut out,
                "        ",
                &t.optional_service_account_annotation_keys,
            );
        }
    }
    out
}

/// What the kubelet's decoder must read back from the text: the document as `config::Provider`s.
fn expected_providers(doc: &Document, source: &Path) -> Result<Vec<Provider>, CommandError> {
    doc.providers
        .iter()
        .map(|p| {
            let duration = GoDuration::parse(&p.default_cache_duration).map_err(|e| {
                CommandError::Refused(format!(
                    "defaultCacheDuration {:?}: {e}",
                    p.default_cache_duration
                ))
            })?;
            Ok(Provider {
                name: p.name.to_owned(),
                match_images: p.match_images.clone(),
                default_cache_duration: Some(duration),
                api_version: p.api_version.clone(),
                args: p.args.clone(),
                env: p
                    .env
                    .iter()
                    .map(|e| (e.name.clone(), e.value.clone()))
                    .collect(),
                token_attributes: p.token_attributes.as_ref().map(|t| TokenAttributes {
                    audience: t.service_account_token_audience.clone(),
                    cache_type: t.cache_type.to_owned(),
                    require_service_account: Some(t.require_service_account),
                    required_keys: Vec::new(),
                    optional_keys: t.optional_service_account_annotation_keys.clone(),
                }),
                source: source.to_path_buf(),
            })
        })
        .collect()
}

/// What `init` produced: the config text and the lines for stderr.
#[derive(Debug)]
pub struct Generated {
    /// The config, for stdout.
    pub text: String,
    /// Warnings (always) and the explanation (with `--explain`), one line each, for stderr.
    pub stderr: Vec<String>,
}

/// Builds, checks and renders the config; nothing is printed here.
pub fn generate(args: &InitArgs) -> Result<Generated, CommandError> {
    generate_with(args, args.explain)
}

/// [`generate`], with the `--explain` lines whatever the options say: `install` prints them in
/// its report.
#[cfg_attr(not(unix), allow(dead_code))]
pub fn generate_explained(args: &InitArgs) -> Result<Generated, CommandError> {
    generate_with(args, true)
}

fn generate_with(args: &InitArgs, explain: bool) -> Result<Generated, CommandError> {
    let checked = args.check()?;
    let doc = args.document(&checked);
    let text = match args.format {
        DocFormat::Yaml => to_yaml(&doc, &args.header(&doc)),
        DocFormat::Json => {
            let mut json = serde_json::to_string_pretty(&doc)
                .map_err(|e| CommandError::Refused(format!("writing JSON: {e}")))?;
            json.push('\n');
            json
        }
    };

    // Read it back as the kubelet will: strict decode, the same data, then every rule.
    let source = PathBuf::from("<init>");
    let decoded = config::decode(&text, &source).map_err(|e| {
        CommandError::Refused(format!(
            "the kubelet could not read the generated config: {e}"
        ))
    })?;
    if decoded != expected_providers(&doc, &source)? {
        return Err(CommandError::Refused(
            "the generated config does not read back as the data it was written from (a bug in init)".to_owned(),
        ));
    }
    let loaded = Config {
        files: vec![source],
        directory: args.drop_in,
        providers: decoded,
    };
    let v = validate::validate(&loaded, None);
    if let Some(message) = v.kubelet_message() {
        return Err(CommandError::Refused(format!(
            "the kubelet would refuse this config: {message}"
        )));
    }
    if let Some(f) = v.arguments.first() {
        return Err(CommandError::Refused(format!(
            "{}: {}",
            f.provider.as_deref().unwrap_or_default(),
            f.message
        )));
    }

    let mut stderr: Vec<String> = v
        .warnings
        .iter()
        .map(|w| format!("warning: {}", finding(w)))
        .collect();
    if explain {
        stderr.extend(args.explanation(&doc, &v));
    }
    Ok(Generated { text, stderr })
}

/// `init`: prints the config on stdout and nothing else there; returns the exit status.
pub fn run(args: &InitArgs) -> Result<u8, CommandError> {
    let generated = generate(args)?;
    for line in &generated.stderr {
        eprintln!("{line}");
    }
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(generated.text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| CommandError::Usage(format!("writing the config to stdout: {e}")))?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_escapes_what_yaml_and_json_would_misread() {
        assert_eq!(quoted(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(quoted("x\ny\u{7}\u{2028}"), r#""x\ny\u0007\u2028""#);
        assert_eq!(quoted("robot$puller"), r#""robot$puller""#);
        assert_eq!(
            plain("credentialprovider.kubelet.k8s.io/v1"),
            "credentialprovider.kubelet.k8s.io/v1"
        );
        assert_eq!(plain("true"), "\"true\"");
        assert_eq!(plain("1h"), "\"1h\"");
    }

    #[test]
    fn every_provider_has_defaults_on_every_platform() {
        for platform in Platform::value_variants() {
            for provider in ProviderKind::value_variants() {
                let d = provider_defaults(*provider, *platform);
                assert!(GoDuration::parse(d.cache_duration).is_ok());
            }
            // Every default path is absolute in the platform's own spelling.
            let p = platform_defaults(*platform);
            for path in [p.bin_dir, p.config, p.config_service_account]
                .into_iter()
                .chain(p.drop_in_dir)
            {
                assert!(
                    absolute("path", path, p.windows).is_ok(),
                    "{}: {path}",
                    p.name
                );
            }
        }
        assert!(absolute("path", r"C:\k", true).is_ok());
        assert!(absolute("path", "/k", true).is_err());
        assert!(absolute("path", r"C:\k", false).is_err());
    }

    #[test]
    fn mirror_sources_follow_the_providers_parser() {
        let source = |v: &str| mirror_source("--x", "DST", v).ok();
        assert_eq!(
            source("mcr.microsoft.com:r.azurecr.io"),
            Some("mcr.microsoft.com".to_owned())
        );
        assert_eq!(source("Reg:5000=r.azurecr.io"), Some("reg:5000".to_owned()));
        for bad in ["a:b:c", ":r.azurecr.io", "a:b,c:d", "a: b"] {
            assert!(source(bad).is_none(), "{bad}");
        }
    }
}
