//! The `CredentialProviderConfig` built from the defaults and the options ([`Document`]), the
//! kubelet flags written on top of it, and the `--explain` lines.

use kcp_kubelet::matching::match_image;
use kcp_kubelet_emulation::config;
use kcp_kubelet_emulation::validate;
use serde::Serialize;

use super::check::{Checked, split_commas};
use super::defaults::{
    ACR_IB_TOKEN, ArgDefault, AudienceDefault, ECR_POD_IDENTITY_TOKEN, ImagesDefault,
    ProviderDefaults, platform_defaults, provider_defaults,
};
use super::{InitArgs, ProviderKind};

const CONFIG_GROUP: &str = "kubelet.config.k8s.io";
const PROVIDER_GROUP: &str = "credentialprovider.kubelet.k8s.io";

/// A `CredentialProviderConfig`, fields in the order they are written.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Document {
    pub(super) api_version: String,
    pub(super) kind: &'static str,
    pub(super) providers: Vec<Entry>,
}

/// One `providers[]` entry.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Entry {
    pub(super) name: &'static str,
    pub(super) match_images: Vec<String>,
    pub(super) default_cache_duration: String,
    pub(super) api_version: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) args: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) env: Vec<EnvVar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) token_attributes: Option<TokenAttrs>,
}

/// One `env` entry: `--env P=NAME=VALUE`.
#[derive(Debug, Serialize)]
pub(super) struct EnvVar {
    pub(super) name: String,
    pub(super) value: String,
}

/// `tokenAttributes` as written (required keys only from `--oidc-required-annotation`: every
/// other default is opt-in per ServiceAccount).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TokenAttrs {
    pub(super) service_account_token_audience: String,
    pub(super) cache_type: &'static str,
    pub(super) require_service_account: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) required_service_account_annotation_keys: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) optional_service_account_annotation_keys: Vec<String>,
}

impl InitArgs {
    /// Builds the document from the defaults table and the options.
    pub(super) fn document(&self, checked: &Checked<'_>) -> Document {
        let providers = checked
            .providers
            .iter()
            .map(|&p| self.entry(p, checked))
            .collect();
        Document {
            api_version: format!("{CONFIG_GROUP}/{}", self.api_version.name()),
            kind: config::CONFIG_KIND,
            providers,
        }
    }

    /// One provider's entry: its defaults on this platform, then what the options change.
    fn entry(&self, p: ProviderKind, checked: &Checked<'_>) -> Entry {
        let d = provider_defaults(p, self.platform);
        let mut match_images = match d.match_images {
            ImagesDefault::Fixed(images) => images.iter().map(|s| (*s).to_owned()).collect(),
            ImagesDefault::StaticRegistry => checked.static_registry.clone(),
            // check() insists on --match-images for it.
            ImagesDefault::Given => Vec::new(),
        };
        if let Some((_, list)) = self.match_images.iter().rev().find(|(q, _)| *q == p) {
            match_images = split_commas(list);
        }
        let mut args = self.default_args(d, checked);
        self.provider_args(p, checked, &mut args, &mut match_images);
        args.extend(
            self.args
                .iter()
                .filter(|(q, _)| *q == p)
                .map(|(_, a)| a.clone()),
        );
        // The platform's env first (eks-hybrid: nodeadm's AWS config), then `--env`'s.
        let env = d
            .env
            .iter()
            .copied()
            .chain(
                self.env
                    .iter()
                    .filter(|(q, _)| *q == p)
                    .filter_map(|(_, e)| e.split_once('=')),
            )
            .map(|(name, value)| EnvVar {
                name: name.to_owned(),
                value: value.to_owned(),
            })
            .collect();
        Entry {
            name: p.binary(),
            match_images,
            default_cache_duration: self
                .cache_duration
                .clone()
                .unwrap_or_else(|| d.cache_duration.to_owned()),
            api_version: format!("{PROVIDER_GROUP}/{}", self.api_version.name()),
            args,
            env,
            token_attributes: self.token_attributes(p, d, checked),
        }
    }

    /// The args the defaults table gives the provider, filled in from the options.
    fn default_args(&self, d: &ProviderDefaults, checked: &Checked<'_>) -> Vec<String> {
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
                ArgDefault::OidcConfig => {
                    args.push(format!("--config={}", self.oidc_registries_file()));
                }
                ArgDefault::AlibabaIdentity => {
                    if let Some(rrsa) = &checked.alibaba_rrsa {
                        args.push(format!("--oidc-provider-arn={}", rrsa.arn));
                    }
                }
            }
        }
        args
    }

    /// The args only some providers take (ecr's mirrors and roles, alibaba's instances, acr's
    /// identity bindings and mirrors, the fleet's shared identity), and the images a mirror or
    /// an instance adds to `match_images`.
    fn provider_args(
        &self,
        p: ProviderKind,
        checked: &Checked<'_>,
        args: &mut Vec<String>,
        match_images: &mut Vec<String>,
    ) {
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
        if p == ProviderKind::Alibaba {
            for (value, host) in &checked.alibaba_instances {
                args.push(format!("--instance={value}"));
                if !match_images
                    .iter()
                    .any(|pattern| match_image(pattern, host))
                {
                    match_images.push(host.clone());
                }
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
        // Fleet mode: only the providers whose node-identity tokens a fleet shares.
        if let Some(name) = &self.token_cache_shared_identity
            && matches!(p, ProviderKind::Ecr | ProviderKind::Acr)
        {
            args.push(format!("--token-cache-shared-identity={name}"));
        }
    }

    /// `tokenAttributes`, in token mode (`--service-account`, or always for oidc) for providers
    /// with a per-pod identity.
    fn token_attributes(
        &self,
        p: ProviderKind,
        d: &ProviderDefaults,
        checked: &Checked<'_>,
    ) -> Option<TokenAttrs> {
        // Identity bindings: AKS's own tokenAttributes (AgentBaker); EKS Pod Identity its
        // own audience.
        let token = match &d.token {
            Some(_) if p == ProviderKind::Acr && !checked.identity_bindings.is_empty() => {
                Some(&ACR_IB_TOKEN)
            }
            Some(_) if p == ProviderKind::Ecr && self.ecr_eks_pod_identity_cluster.is_some() => {
                Some(&ECR_POD_IDENTITY_TOKEN)
            }
            other => other.as_ref(),
        };
        // oidc has nothing to trade without the pod's token: always in token mode.
        let token_mode = self.service_account || p == ProviderKind::Oidc;
        match token {
            Some(t) if token_mode => Some(TokenAttrs {
                service_account_token_audience: match t.audience {
                    AudienceDefault::Fixed(a) => a.to_owned(),
                    AudienceDefault::GcrIdentity => checked
                        .gcr
                        .as_ref()
                        .map(|g| g.audience.clone())
                        .unwrap_or_default(),
                    AudienceDefault::OidcAudience => self.oidc_audience.clone().unwrap_or_default(),
                },
                cache_type: match self.oidc_cache_type {
                    Some(c) if p == ProviderKind::Oidc => c.name(),
                    _ => t.cache_type,
                },
                require_service_account: t.require_service_account,
                required_service_account_annotation_keys: if p == ProviderKind::Oidc {
                    self.oidc_required_annotation.clone()
                } else {
                    Vec::new()
                },
                // ecr's own keys replace the default one: a cluster that reserves it
                // must not have it forwarded either.
                optional_service_account_annotation_keys: if p == ProviderKind::Ecr
                    && !self.ecr_role_annotation_key.is_empty()
                {
                    self.ecr_role_annotation_key.clone()
                } else if p == ProviderKind::Oidc {
                    self.oidc_optional_annotation.clone()
                } else {
                    t.optional_keys.iter().map(|k| (*k).to_owned()).collect()
                },
            }),
            _ => None,
        }
    }

    /// oidc's registries file on the node: `--oidc-config`, else the platform's.
    pub(super) fn oidc_registries_file(&self) -> String {
        self.oidc_config
            .clone()
            .unwrap_or_else(|| platform_defaults(self.platform).oidc_registries.to_owned())
    }

    /// The lines written as YAML comments on top (and first with `--explain`): the kubelet flags.
    /// The same text `scripts/install` has always written, so an upgrade rewrites no config.
    pub(super) fn header(&self, doc: &Document) -> Vec<String> {
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
    pub(super) fn explanation(&self, doc: &Document, v: &validate::Validation) -> Vec<String> {
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
        if let Some(name) = &self.token_cache_shared_identity {
            let names: Vec<&str> = doc
                .providers
                .iter()
                .filter(|p| {
                    p.args
                        .iter()
                        .any(|a| a.starts_with("--token-cache-shared-identity="))
                })
                .map(|p| p.name)
                .collect();
            lines.push(format!(
                "fleet mode: {} use the shared identity {name}: the fleet DaemonSet's wait copies the token controller's entries into their token cache; without them they fetch on their own (docs/install.md, Fleet mode)",
                names.join(", ")
            ));
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

/// Files a provider reads when a request arrives (not at kubelet start): acr's azure.json (and
/// the cluster CA with identity bindings), static's password file, oidc's registries file.
pub(super) fn runtime_files(doc: &Document) -> Vec<(String, &'static str)> {
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
        } else if p.name == ProviderKind::Oidc.binary() {
            for a in &p.args {
                if let Some(path) = a.strip_prefix("--config=") {
                    files.push((path.to_owned(), p.name));
                }
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

pub(super) fn finding(f: &validate::Finding) -> String {
    match &f.provider {
        Some(p) => format!("{p}: {}", f.message),
        None => f.message.clone(),
    }
}
