//! The defaults as typed data: where each platform keeps the binaries and the config and who sets
//! the kubelet flags (`platform_defaults`), and what each provider's entry holds on each platform
//! (`provider_defaults`): `matchImages`, `defaultCacheDuration`, `args` and `tokenAttributes`.

use super::{Platform, ProviderKind};

/// What a platform decides about paths and who sets the kubelet flags.
#[derive(Debug)]
pub(super) struct PlatformDefaults {
    /// The name `--platform` takes.
    pub(super) name: &'static str,
    /// `--image-credential-provider-bin-dir`.
    pub(super) bin_dir: &'static str,
    /// `--image-credential-provider-config` for node credentials.
    pub(super) config: &'static str,
    /// `--image-credential-provider-config` in service-account mode (EKS: nodeadm owns the other).
    pub(super) config_service_account: &'static str,
    /// The config directory a drop-in goes to, if the platform has an obvious one.
    pub(super) drop_in_dir: Option<&'static str>,
    /// Why the platform cannot read a config directory at all, if it cannot.
    pub(super) no_drop_in: Option<&'static str>,
    /// Where the two flags are set on this platform (one line).
    pub(super) flags_home: &'static str,
    /// oidc's registries file (its `--config`), beside the platform's kubelet config.
    pub(super) oidc_registries: &'static str,
    /// Windows nodes: paths are `C:\...`, binaries `<name>.exe`.
    pub(super) windows: bool,
}

pub(super) const KUBEADM_FLAGS: &str = "put both flags in KUBELET_EXTRA_ARGS (/etc/default/kubelet or /etc/sysconfig/kubelet) or in kubeadm's nodeRegistration.kubeletExtraArgs (Cluster API: the KubeadmConfig), then restart the kubelet";
pub(super) const RANCHER_BIN: &str = "/var/lib/rancher/credentialprovider/bin";
pub(super) const RANCHER_CONFIG: &str = "/var/lib/rancher/credentialprovider/config.yaml";
pub(super) const RANCHER_NO_DROP_IN: &str = "reads one config file (/var/lib/rancher/credentialprovider/config.yaml, which must be a regular file), not a directory";
pub(super) const GENERIC_BIN: &str =
    "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec";
pub(super) const GENERIC_CONFIG: &str = "/etc/kubernetes/credential-provider-config.yaml";
pub(super) const GENERIC_DROP_IN: &str = "/etc/kubernetes/credential-providers.d";
pub(super) const GENERIC_OIDC: &str = "/etc/kubernetes/oidc-registries.yaml";
pub(super) const RANCHER_OIDC: &str = "/var/lib/rancher/credentialprovider/oidc-registries.yaml";
/// Windows nodes: no upstream default for our binaries, so ours, beside the kubelet's own files
/// under `C:\k` (where AKS keeps `azure.json`).
pub(super) const WINDOWS_BIN: &str = r"C:\k\credential-provider";
pub(super) const WINDOWS_CONFIG: &str = r"C:\k\credential-provider-config.yaml";
pub(super) const WINDOWS_OIDC: &str = r"C:\k\oidc-registries.yaml";
pub(super) const WINDOWS_FLAGS: &str = "add both flags to the kubelet's arguments where the node starts it (its Windows service or start-up script), then Restart-Service kubelet; the kubelet runs <name>.exe from the bin dir, so the config names each provider without .exe";
pub(super) const AKS_WINDOWS: PlatformDefaults = windows_platform("aks-windows");
pub(super) const EKS_WINDOWS: PlatformDefaults = windows_platform("eks-windows");

/// A Windows node pool: the same paths and flags whatever the cloud.
pub(super) const fn windows_platform(name: &'static str) -> PlatformDefaults {
    PlatformDefaults {
        name,
        bin_dir: WINDOWS_BIN,
        config: WINDOWS_CONFIG,
        config_service_account: WINDOWS_CONFIG,
        drop_in_dir: None,
        no_drop_in: None,
        flags_home: WINDOWS_FLAGS,
        oidc_registries: WINDOWS_OIDC,
        windows: true,
    }
}

/// The platform table.
pub(super) fn platform_defaults(platform: Platform) -> &'static PlatformDefaults {
    match platform {
        Platform::Generic => &PlatformDefaults {
            name: "generic",
            bin_dir: GENERIC_BIN,
            config: GENERIC_CONFIG,
            config_service_account: GENERIC_CONFIG,
            drop_in_dir: Some(GENERIC_DROP_IN),
            no_drop_in: None,
            flags_home: KUBEADM_FLAGS,
            oidc_registries: GENERIC_OIDC,
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
            oidc_registries: "/etc/eks/image-credential-provider/oidc-registries.yaml",
            windows: false,
        },
        // The hybrid nodeadm's layout (docs/providers/ecr.md "Hybrid and on-prem nodes"):
        // `nodeadm install` puts the binary in the EKS directory, `nodeadm init` writes
        // config.json there and sets both kubelet flags.
        Platform::EksHybrid => &PlatformDefaults {
            name: "eks-hybrid",
            bin_dir: "/etc/eks/image-credential-provider",
            config: "/etc/eks/image-credential-provider/config.json",
            config_service_account: "/etc/eks/image-credential-provider/config-service-account.yaml",
            drop_in_dir: None,
            no_drop_in: None,
            flags_home: "the hybrid nodeadm sets both flags (nodeadm init writes config.json, with the ECR entry's env AWS_CONFIG_FILE=/etc/aws/hybrid/config and AWS_PROFILE=default); replace the ecr-credential-provider binary that nodeadm install put in /etc/eks/image-credential-provider: it reads the profile's aws_signing_helper credential_process itself, so the helper binary is no longer needed",
            oidc_registries: "/etc/eks/image-credential-provider/oidc-registries.yaml",
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
            oidc_registries: "/var/lib/kubelet/oidc-registries.yaml",
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
            oidc_registries: "/etc/srv/kubernetes/oidc-registries.yaml",
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
            oidc_registries: RANCHER_OIDC,
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
            oidc_registries: RANCHER_OIDC,
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
            oidc_registries: GENERIC_OIDC,
            windows: false,
        },
        Platform::AksWindows => &AKS_WINDOWS,
        Platform::EksWindows => &EKS_WINDOWS,
    }
}

/// Where a provider's `matchImages` come from.
#[derive(Debug)]
pub(super) enum ImagesDefault {
    /// A fixed list.
    Fixed(&'static [&'static str]),
    /// The registries given to `--static-registry`, which the robot account is for.
    StaticRegistry,
    /// None: `--match-images P=LIST` is required.
    Given,
}

/// One default argument.
#[derive(Debug)]
pub(super) enum ArgDefault {
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
    /// `--config=` and oidc's registries file (`--oidc-config`, else the platform's).
    OidcConfig,
    /// alibaba's RRSA flags from `--alibaba-oidc-provider-arn` (only with `--service-account`).
    AlibabaIdentity,
}

/// Where a provider's service-account token audience comes from.
#[derive(Debug)]
pub(super) enum AudienceDefault {
    /// A fixed audience.
    Fixed(&'static str),
    /// From the `--gcr-*` identity options.
    GcrIdentity,
    /// `--oidc-audience`: the audience the registry's OIDC trust expects.
    OidcAudience,
}

/// `tokenAttributes` in service-account mode.
#[derive(Debug)]
pub(super) struct TokenDefaults {
    pub(super) audience: AudienceDefault,
    /// `ServiceAccount`: the registry token depends only on the ServiceAccount, and outlives the
    /// pod's token. (oidc: `--oidc-cache-type`.)
    pub(super) cache_type: &'static str,
    /// `false`: pods that did not opt in, and static pods, keep pulling with the node's identity.
    /// `true` (oidc): a pod without a token has nothing to trade, so the kubelet skips the plugin.
    pub(super) require_service_account: bool,
    pub(super) optional_keys: &'static [&'static str],
}

/// One provider's entry on one platform.
#[derive(Debug)]
pub(super) struct ProviderDefaults {
    pub(super) match_images: ImagesDefault,
    pub(super) cache_duration: &'static str,
    pub(super) args: &'static [ArgDefault],
    /// `None`: the provider has no per-pod identity.
    pub(super) token: Option<TokenDefaults>,
    /// `env` entries the platform gives the provider (before `--env`'s).
    pub(super) env: &'static [(&'static str, &'static str)],
}

/// EKS AL2023 nodeadm's 13 patterns, in its order.
pub(super) const ECR_IMAGES: &[&str] = &[
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
pub(super) const ACR_IMAGES: &[&str] = &[
    "*.azurecr.io",
    "*.azurecr.cn",
    "*.azurecr.de",
    "*.azurecr.us",
    "*.*.*.azurecr.io",
];
pub(super) const GCR_IMAGES: &[&str] = &[
    "container.cloud.google.com",
    "gcr.io",
    "*.gcr.io",
    "*.pkg.dev",
];

pub(super) const ECR_TOKEN: TokenDefaults = TokenDefaults {
    audience: AudienceDefault::Fixed("sts.amazonaws.com"),
    cache_type: "ServiceAccount",
    require_service_account: false,
    optional_keys: &["eks.amazonaws.com/ecr-role-arn"],
};
/// ECR with EKS Pod Identity: the audience EKS Auth accepts. The role annotation stays listed:
/// an annotated ServiceAccount still pulls as its annotated role.
pub(super) const ECR_POD_IDENTITY_TOKEN: TokenDefaults = TokenDefaults {
    audience: AudienceDefault::Fixed("pods.eks.amazonaws.com"),
    ..ECR_TOKEN
};

/// The ECR entry everywhere but EKS.
pub(super) const ECR: ProviderDefaults = ProviderDefaults {
    match_images: ImagesDefault::Fixed(ECR_IMAGES),
    cache_duration: "12h",
    args: &[ArgDefault::Literal("get-credentials")],
    token: Some(ECR_TOKEN),
    env: &[],
};
/// The ECR entry as nodeadm writes it on EKS AL2023 (no args; Go's duration spelling).
pub(super) const ECR_EKS: ProviderDefaults = ProviderDefaults {
    match_images: ImagesDefault::Fixed(ECR_IMAGES),
    cache_duration: "12h0m0s",
    args: &[],
    token: Some(ECR_TOKEN),
    env: &[],
};
/// The hybrid nodeadm's AWS config file for IAM Roles Anywhere.
pub(super) const EKS_HYBRID_AWS_CONFIG: &str = "/etc/aws/hybrid/config";
/// The ECR entry as the hybrid nodeadm writes it with IAM Roles Anywhere: EKS's, plus the env
/// that points the provider at nodeadm's AWS config and its profile (`default`; nodeadm's
/// older `hybrid` profile is kept only for compatibility).
pub(super) const ECR_EKS_HYBRID: ProviderDefaults = ProviderDefaults {
    env: &[
        ("AWS_CONFIG_FILE", EKS_HYBRID_AWS_CONFIG),
        ("AWS_PROFILE", "default"),
    ],
    ..ECR_EKS
};
pub(super) const ACR_TOKEN: TokenDefaults = TokenDefaults {
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
pub(super) const ACR_IB_TOKEN: TokenDefaults = TokenDefaults {
    audience: AudienceDefault::Fixed("api://AKSIdentityBinding"),
    cache_type: "ServiceAccount",
    require_service_account: false,
    optional_keys: &["kubernetes.azure.com/acr-client-id"],
};
/// The ACR entry; AKS (AgentBaker) passes the same azure.json path.
pub(super) const ACR: ProviderDefaults = ProviderDefaults {
    match_images: ImagesDefault::Fixed(ACR_IMAGES),
    cache_duration: "10m",
    args: &[ArgDefault::AzureConfig("/etc/kubernetes/azure.json")],
    token: Some(ACR_TOKEN),
    env: &[],
};
/// The ACR entry on Windows nodes, where AKS keeps azure.json in `C:\k`.
pub(super) const ACR_WINDOWS: ProviderDefaults = ProviderDefaults {
    args: &[ArgDefault::AzureConfig(r"C:\k\azure.json")],
    ..ACR
};
pub(super) const GCR: ProviderDefaults = ProviderDefaults {
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
    env: &[],
};
pub(super) const STATIC: ProviderDefaults = ProviderDefaults {
    match_images: ImagesDefault::StaticRegistry,
    cache_duration: "1h",
    args: &[
        ArgDefault::StaticRegistry,
        ArgDefault::StaticUsername,
        ArgDefault::StaticPasswordFile,
    ],
    token: None,
    env: &[],
};

/// oidc: every exchange trades the pod's token, so tokenAttributes always; no default images
/// (the registries are the operator's); the annotation keys come from the options.
pub(super) const OIDC: ProviderDefaults = ProviderDefaults {
    match_images: ImagesDefault::Given,
    cache_duration: "5m",
    args: &[ArgDefault::OidcConfig],
    token: Some(TokenDefaults {
        audience: AudienceDefault::OidcAudience,
        cache_type: "Token",
        require_service_account: true,
        optional_keys: &[],
    }),
    env: &[],
};

/// Container Registry's host forms, one `*` per label as the kubelet matches them: Personal
/// Edition's `registry[-vpc|-intl|-intl-vpc].<region>.aliyuncs.com`, Enterprise Edition's
/// `<instance>-registry[-vpc].<region>.cr.aliyuncs.com` and the newer Personal Edition instances'
/// `crpi-<id>[-vpc].<region>.personal.cr.aliyuncs.com`. Each first label is narrowed to its form,
/// so the kubelet does not run the plugin for other Alibaba Cloud services' hosts (a pattern of
/// whole-label `*` over `aliyuncs.com` would take every OSS or API host too); custom domains come
/// from `--alibaba-instance`.
pub(super) const ALIBABA_IMAGES: &[&str] = &[
    "registry*.*.aliyuncs.com",
    "*-registry*.*.cr.aliyuncs.com",
    "crpi-*.*.personal.cr.aliyuncs.com",
];

/// RRSA: the audience ACK's RAM OIDC providers accept by default, and the annotation ACK's pod
/// identity webhook reads. Pods without the annotation, and static pods, keep the node's role.
pub(super) const ALIBABA_TOKEN: TokenDefaults = TokenDefaults {
    audience: AudienceDefault::Fixed("sts.aliyuncs.com"),
    cache_type: "ServiceAccount",
    require_service_account: false,
    optional_keys: &["pod-identity.alibabacloud.com/role-name"],
};

/// alibaba: Container Registry's temporary passwords live an hour, and the provider sets
/// `cacheDuration` from each one's own expiry; the default only covers an answer without it.
pub(super) const ALIBABA: ProviderDefaults = ProviderDefaults {
    match_images: ImagesDefault::Fixed(ALIBABA_IMAGES),
    cache_duration: "55m",
    args: &[
        ArgDefault::Literal("get-credentials"),
        ArgDefault::AlibabaIdentity,
    ],
    env: &[],
    token: Some(ALIBABA_TOKEN),
};

/// The provider x platform table.
pub(super) fn provider_defaults(
    provider: ProviderKind,
    platform: Platform,
) -> &'static ProviderDefaults {
    match (provider, platform) {
        (ProviderKind::Ecr, Platform::Eks) => &ECR_EKS,
        (ProviderKind::Ecr, Platform::EksHybrid) => &ECR_EKS_HYBRID,
        (ProviderKind::Ecr, _) => &ECR,
        (ProviderKind::Acr, Platform::AksWindows | Platform::EksWindows) => &ACR_WINDOWS,
        (ProviderKind::Acr, _) => &ACR,
        (ProviderKind::Gcr, _) => &GCR,
        (ProviderKind::Static, _) => &STATIC,
        (ProviderKind::Oidc, _) => &OIDC,
        (ProviderKind::Alibaba, _) => &ALIBABA,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::init::check::absolute;
    use clap::ValueEnum;
    use kcp_kubelet::duration::GoDuration;

    #[test]
    fn every_provider_has_defaults_on_every_platform() {
        for platform in Platform::value_variants() {
            for provider in ProviderKind::value_variants() {
                let d = provider_defaults(*provider, *platform);
                assert!(GoDuration::parse(d.cache_duration).is_ok());
            }
            // Every default path is absolute in the platform's own spelling.
            let p = platform_defaults(*platform);
            for path in [
                p.bin_dir,
                p.config,
                p.config_service_account,
                p.oidc_registries,
            ]
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
}
