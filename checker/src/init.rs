//! `init`: the one source of this project's provider defaults. It owns, as typed data, what each
//! provider's `CredentialProviderConfig` entry looks like on each platform (names, `matchImages`,
//! `defaultCacheDuration`, `args`, `tokenAttributes`) and where each platform keeps the binaries
//! and the config, and it prints a config built from them.
//!
//! The document is built once (`document`) and written as JSON (serde) or as a small
//! deterministic YAML (every free-form value double-quoted). Before anything is printed the text is
//! decoded back with the kubelet's strict decoder, compared with the data it came from, and run
//! through the kubelet's validation rules: `init` never prints a config the kubelet would refuse.
//! `scripts/install` and the examples in `testdata/configs/` both come from here.
//!
//! This file holds the options and the order of the work; each step has a file of its own:
//! `defaults` (the platform and provider tables), `check` (the options against each other),
//! `document` (the config, the flags on top, `--explain`), `yaml` (the writer) and `read_back`
//! (the round trip through the kubelet's decoder and rules).

use std::io::Write as _;

use clap::{Args, ValueEnum};

use crate::CommandError;

mod check;
mod defaults;
mod document;
mod read_back;
mod skeleton;
mod yaml;

use defaults::platform_defaults;
use document::finding;

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
    /// Any registry that trusts the cluster's service-account tokens (registries file).
    Oidc,
    /// Alibaba Cloud Container Registry (Enterprise and Personal Edition).
    Alibaba,
}

impl ProviderKind {
    /// The short name used in `P=VALUE` options.
    fn short(self) -> &'static str {
        match self {
            ProviderKind::Ecr => "ecr",
            ProviderKind::Acr => "acr",
            ProviderKind::Gcr => "gcr",
            ProviderKind::Static => "static",
            ProviderKind::Oidc => "oidc",
            ProviderKind::Alibaba => "alibaba",
        }
    }

    /// The binary's file name, which the kubelet requires as the provider's `name`.
    pub fn binary(self) -> &'static str {
        match self {
            ProviderKind::Ecr => "ecr-credential-provider",
            ProviderKind::Acr => "acr-credential-provider",
            ProviderKind::Gcr => "gcr-credential-provider",
            ProviderKind::Static => "static-credential-provider",
            ProviderKind::Oidc => "oidc-credential-provider",
            ProviderKind::Alibaba => "alibaba-credential-provider",
        }
    }

    /// The binary's file name on a Windows node: the kubelet runs `<name>.exe` for the config's
    /// `name` (Go's `exec.LookPath` adds the extension).
    pub fn binary_exe(self) -> &'static str {
        match self {
            ProviderKind::Ecr => "ecr-credential-provider.exe",
            ProviderKind::Acr => "acr-credential-provider.exe",
            ProviderKind::Gcr => "gcr-credential-provider.exe",
            ProviderKind::Static => "static-credential-provider.exe",
            ProviderKind::Oidc => "oidc-credential-provider.exe",
            ProviderKind::Alibaba => "alibaba-credential-provider.exe",
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
    /// Amazon EKS Hybrid Nodes bootstrapped by the hybrid nodeadm, with IAM Roles Anywhere: the
    /// ECR entry reads nodeadm's AWS config (`/etc/aws/hybrid/config`), whose
    /// `credential_process` ecr-credential-provider runs natively, without the signing helper.
    EksHybrid,
    /// Azure AKS (AgentBaker node layout).
    Aks,
    /// Google GKE (COS or Ubuntu nodes).
    Gke,
    /// k3s (server or agent), which wires both kubelet flags itself to
    /// /var/lib/rancher/credentialprovider.
    K3s,
    /// RKE2 (server or agent), with k3s's layout under /var/lib/rancher/credentialprovider.
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
    /// Providers to configure, in config order: ecr, acr, gcr, static, oidc, alibaba (repeatable
    /// or comma-separated).
    #[arg(
        long = "provider",
        visible_alias = "providers",
        value_name = "PROVIDER",
        value_enum,
        value_delimiter = ',',
        required = true
    )]
    providers: Vec<ProviderKind>,
    /// The node's platform: its paths, where the kubelet flags go, and its provider defaults
    /// (`--profile` is the same option: `--profile eks-hybrid`).
    #[arg(long, visible_alias = "profile", value_enum, default_value = "generic")]
    platform: Platform,
    /// Per-pod identities (KEP-4412 tokenAttributes; kubelet 1.34+) for ecr, acr, gcr and alibaba
    /// (oidc always has them).
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
    /// 10m, gcr 1m, static 1h, oidc 5m, alibaba 55m).
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
    /// oidc: the service-account token audience the registries expect (required with oidc).
    #[arg(long, value_name = "AUD", value_parser = one_line("--oidc-audience"))]
    oidc_audience: Option<String>,
    /// oidc: the registries file, its --config (default: the platform's, e.g.
    /// /etc/kubernetes/oidc-registries.yaml; C:\k\oidc-registries.yaml on Windows).
    #[arg(long, value_name = "FILE", value_parser = one_line("--oidc-config"))]
    oidc_config: Option<String>,
    /// oidc: the kubelet's cacheType, Token (default: one answer per pod token; passthrough needs
    /// it) or ServiceAccount.
    #[arg(long, value_name = "TYPE", value_enum)]
    oidc_cache_type: Option<CacheType>,
    /// oidc: a service-account annotation the kubelet must forward; pods whose ServiceAccount
    /// lacks it are not run through the plugin (repeatable).
    #[arg(long, value_name = "KEY", value_parser = one_line("--oidc-required-annotation"))]
    oidc_required_annotation: Vec<String>,
    /// oidc: a service-account annotation forwarded when present, e.g.
    /// quay.io/federated-robot-account (repeatable).
    #[arg(long, value_name = "KEY", value_parser = one_line("--oidc-optional-annotation"))]
    oidc_optional_annotation: Vec<String>,
    /// alibaba with --service-account: the cluster's RAM OIDC provider for RRSA,
    /// acs:ram::ACCOUNT:oidc-provider/NAME (adds --oidc-provider-arn=ARN; roles the annotation
    /// names without an ARN are taken from its account).
    #[arg(long, value_name = "ARN", value_parser = one_line("--alibaba-oidc-provider-arn"))]
    alibaba_oidc_provider_arn: Option<String>,
    /// alibaba: an Enterprise Edition instance's custom domain, HOST[:PORT]=cri-ID; adds
    /// --instance=VALUE to args and HOST[:PORT] to matchImages unless already matched (repeatable).
    #[arg(long, value_name = "HOST=ID", value_parser = one_line("--alibaba-instance"))]
    alibaba_instance: Vec<String>,
    /// Fleet mode: the nodes' shared identity NAME (the token controller's `sharedIdentity`);
    /// appends --token-cache-shared-identity=NAME to ecr's and acr's args, the only providers
    /// whose node-identity tokens a fleet can share.
    #[arg(long, value_name = "NAME", value_parser = one_line("--token-cache-shared-identity"))]
    token_cache_shared_identity: Option<String>,
    /// oidc: print a registries file skeleton (one entry per --match-images oidc= host, every
    /// protocol commented out) instead of the config.
    #[arg(long)]
    registries_skeleton: bool,
}

/// `tokenAttributes.cacheType`, as the kubelet spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CacheType {
    /// One answer per pod token.
    #[value(name = "Token", alias = "token")]
    Token,
    /// One answer per ServiceAccount.
    #[value(name = "ServiceAccount", alias = "service-account")]
    ServiceAccount,
}

impl CacheType {
    fn name(self) -> &'static str {
        match self {
            CacheType::Token => "Token",
            CacheType::ServiceAccount => "ServiceAccount",
        }
    }
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
        let provider = ProviderKind::from_str(p, false).map_err(|_| {
            format!("{option}: unknown provider {p:?} (ecr, acr, gcr, static, oidc, alibaba)")
        })?;
        Ok((provider, value.to_owned()))
    }
}

impl InitArgs {
    /// The kubelet's `--image-credential-provider-config` for this output.
    fn config_target(&self) -> String {
        let platform = platform_defaults(self.platform);
        if let Some(path) = &self.config_path {
            return path.clone();
        }
        let default = if self.drop_in {
            platform.drop_in_dir
        } else if self.service_account || self.providers.contains(&ProviderKind::Oidc) {
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
}

/// What `install` needs from the options: the same defaults `init` prints, never a second copy.
impl InitArgs {
    /// The providers' binary file names, in config order, each once (`<name>.exe` on the
    /// Windows platforms).
    pub fn binaries(&self) -> Vec<&'static str> {
        let windows = self.windows();
        let mut names = Vec::new();
        for p in &self.providers {
            let name = if windows { p.binary_exe() } else { p.binary() };
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// Whether `--providers` names `kind`.
    pub fn has_provider(&self, kind: ProviderKind) -> bool {
        self.providers.contains(&kind)
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

    /// Whether `--registries-skeleton` asks for oidc's registries file instead of the config.
    pub fn registries_skeleton(&self) -> bool {
        self.registries_skeleton
    }

    /// The fleet's shared identity (`--token-cache-shared-identity`), when given.
    pub fn shared_identity(&self) -> Option<&str> {
        self.token_cache_shared_identity.as_deref()
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
pub fn generate_explained(args: &InitArgs) -> Result<Generated, CommandError> {
    generate_with(args, true)
}

fn generate_with(args: &InitArgs, explain: bool) -> Result<Generated, CommandError> {
    let checked = args.check()?;
    if args.registries_skeleton {
        return Ok(Generated {
            text: skeleton::skeleton(args)?,
            stderr: Vec::new(),
        });
    }
    let doc = args.document(&checked);
    let text = match args.format {
        DocFormat::Yaml => yaml::to_yaml(&doc, &args.header(&doc)),
        DocFormat::Json => {
            let mut json = serde_json::to_string_pretty(&doc)
                .map_err(|e| CommandError::Refused(format!("writing JSON: {e}")))?;
            json.push('\n');
            json
        }
    };

    // Read it back as the kubelet will: strict decode, the same data, then every rule.
    let v = read_back::read_back(&text, &doc, args.drop_in)?;

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
