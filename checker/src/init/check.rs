//! The options checked against each other and against the providers' own rules, before any
//! document is built: a config `init` prints never fails at a provider's start.

use kcp_kubelet::duration::GoDuration;

use super::defaults::platform_defaults;
use super::{ApiVersion, InitArgs, ProviderKind};
use crate::{CommandError, usage};

/// Comma-separated items, trimmed, empty ones dropped.
pub(super) fn split_commas(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Paths in the config are the node's, absolute in its own spelling: `/...` on Linux, `C:\...`
/// (or `C:/...`, `\\server\share`) on Windows.
pub(super) fn absolute(option: &str, path: &str, windows: bool) -> Result<(), CommandError> {
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
pub(super) struct GcrIdentity {
    pub(super) args: Vec<String>,
    pub(super) audience: String,
}

/// The options checked against each other, before any document is built.
pub(super) struct Checked<'a> {
    pub(super) providers: Vec<ProviderKind>,
    pub(super) gcr: Option<GcrIdentity>,
    pub(super) static_registry: Vec<String>,
    pub(super) mirrors: Vec<(&'a str, String)>,
    /// ecr's mirrors, as `mirrors`.
    pub(super) ecr_mirrors: Vec<(&'a str, String)>,
    /// acr's `--ib-*` args, when identity bindings are on.
    pub(super) identity_bindings: Vec<String>,
    /// alibaba's RRSA settings, with `--service-account`.
    pub(super) alibaba_rrsa: Option<AlibabaRrsa>,
    /// alibaba's `--alibaba-instance` values and the host each names.
    pub(super) alibaba_instances: Vec<(&'a str, String)>,
}

/// alibaba's RRSA settings from `--alibaba-oidc-provider-arn`.
pub(super) struct AlibabaRrsa {
    /// The RAM OIDC provider's ARN (`--oidc-provider-arn`; the provider takes the account of
    /// roles annotated by name from it).
    pub(super) arn: String,
}

impl InitArgs {
    pub(super) fn selected(&self, p: ProviderKind) -> bool {
        self.providers.contains(&p)
    }

    /// Every rule about the options themselves; the kubelet's rules come after. The first
    /// broken rule is the one reported, so the steps run in a fixed order.
    pub(super) fn check(&self) -> Result<Checked<'_>, CommandError> {
        let providers = self.check_provider_options()?;
        let windows = platform_defaults(self.platform).windows;
        self.check_common(windows)?;
        let gcr = self.check_gcr()?;
        let static_registry = self.check_static(windows)?;
        let mirrors = self.check_acr(windows)?;
        let identity_bindings = self.check_identity_bindings(windows)?;
        let ecr_mirrors = self.check_ecr()?;
        self.check_oidc(windows)?;
        self.check_shared_identity(&providers)?;
        let (alibaba_rrsa, alibaba_instances) = self.check_alibaba()?;
        self.check_drop_in()?;
        Ok(Checked {
            providers,
            gcr,
            static_registry,
            mirrors,
            ecr_mirrors,
            identity_bindings,
            alibaba_rrsa,
            alibaba_instances,
        })
    }

    /// The providers asked for, each once in the order given, and the per-provider options
    /// (`--match-images`, `--arg`, `--env`), which must name one of them.
    fn check_provider_options(&self) -> Result<Vec<ProviderKind>, CommandError> {
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
        Ok(providers)
    }

    /// The options every config has: `--cache-duration`, `--service-account`'s API version,
    /// and the node paths `--bin-dir` and `--config-path`.
    fn check_common(&self, windows: bool) -> Result<(), CommandError> {
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
        Ok(())
    }

    /// The `--static-*` options: all three for `--provider static`, none without it; the
    /// registries it answers for.
    fn check_static(&self, windows: bool) -> Result<Vec<String>, CommandError> {
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
        Ok(static_registry)
    }

    /// acr's `--azure-config` and `--acr-registry-mirror`, only with `--provider acr`; each
    /// mirror with its source host.
    fn check_acr(&self, windows: bool) -> Result<Vec<(&str, String)>, CommandError> {
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
        Ok(mirrors)
    }

    /// The `--ecr-*` options, only with `--provider ecr`: mirrors, roles to assume, and what
    /// needs `--service-account`; each mirror with its source host.
    fn check_ecr(&self) -> Result<Vec<(&str, String)>, CommandError> {
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
        Ok(ecr_mirrors)
    }

    /// `--drop-in`: only on platforms whose kubelet reads a config directory, and with
    /// `--config-path DIR` where the platform names no directory.
    fn check_drop_in(&self) -> Result<(), CommandError> {
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
        Ok(())
    }

    /// The `--alibaba-*` options: RRSA needs the cluster's RAM OIDC provider (the provider cannot
    /// trade a pod's token without it), and each custom domain one Enterprise instance ID.
    #[allow(clippy::type_complexity)]
    fn check_alibaba(&self) -> Result<(Option<AlibabaRrsa>, Vec<(&str, String)>), CommandError> {
        if !self.selected(ProviderKind::Alibaba) {
            if self.alibaba_oidc_provider_arn.is_some() || !self.alibaba_instance.is_empty() {
                return usage("--alibaba-* options apply only to --provider alibaba");
            }
            return Ok((None, Vec::new()));
        }
        let mut instances = Vec::new();
        for value in &self.alibaba_instance {
            let Some(host) = alibaba_instance_host(value) else {
                return usage(format!(
                    "--alibaba-instance expects HOST=cri-ID (a registry host name and an Enterprise Edition instance ID), got {value:?}"
                ));
            };
            instances.push((value.as_str(), host));
        }
        let rrsa = match (&self.alibaba_oidc_provider_arn, self.service_account) {
            (Some(_), false) => {
                return usage(
                    "--alibaba-oidc-provider-arn needs --service-account: RRSA trades the pod's service-account token",
                );
            }
            (None, true) => {
                return usage(
                    "alibaba with --service-account needs --alibaba-oidc-provider-arn acs:ram::ACCOUNT:oidc-provider/NAME: the RAM OIDC provider that trusts the cluster's service-account tokens (RRSA)",
                );
            }
            (None, false) => None,
            (Some(arn), true) => {
                if alibaba_oidc_provider_account(arn).is_none() {
                    return usage(format!(
                        "--alibaba-oidc-provider-arn must look like acs:ram::ACCOUNT:oidc-provider/NAME, got {arn:?}"
                    ));
                }
                Some(AlibabaRrsa { arn: arn.clone() })
            }
        };
        Ok((rrsa, instances))
    }

    /// The `--oidc-*` options: oidc always has tokenAttributes, so the same rules as
    /// `--service-account` (v1 only), plus its audience and its registries, which have no default.
    fn check_oidc(&self, windows: bool) -> Result<(), CommandError> {
        if !self.selected(ProviderKind::Oidc) {
            if self.oidc_audience.is_some()
                || self.oidc_config.is_some()
                || self.oidc_cache_type.is_some()
                || !self.oidc_required_annotation.is_empty()
                || !self.oidc_optional_annotation.is_empty()
                || self.registries_skeleton
            {
                return usage(
                    "--oidc-* options and --registries-skeleton apply only to --provider oidc",
                );
            }
            return Ok(());
        }
        if !self
            .match_images
            .iter()
            .any(|(p, _)| *p == ProviderKind::Oidc)
        {
            return usage(
                "oidc needs --match-images oidc=HOSTS: the registry hosts of its registries file (there is no default)",
            );
        }
        if let Some(path) = &self.oidc_config {
            absolute("--oidc-config", path, windows)?;
        }
        if self.registries_skeleton {
            return Ok(());
        }
        if self.api_version != ApiVersion::V1 {
            return usage(
                "oidc needs --api-version v1: it trades the pod's service-account token, and tokenAttributes exist only in v1",
            );
        }
        if self.oidc_audience.as_deref().is_none_or(str::is_empty) {
            return usage(
                "oidc needs --oidc-audience AUD: the service-account token audience its registries (or token endpoint) expect",
            );
        }
        Ok(())
    }

    /// `--token-cache-shared-identity`: a name the providers put in a cache key and the
    /// controller's config repeats, so a plain word; and only for the providers that fetch with
    /// the node's own cloud identity, which a fleet shares.
    fn check_shared_identity(&self, providers: &[ProviderKind]) -> Result<(), CommandError> {
        let Some(name) = &self.token_cache_shared_identity else {
            return Ok(());
        };
        // The providers' own rule (kcp-plugin's shared identity), so a printed config never
        // fails at a provider's start.
        if let Err(e) = kcp_plugin::token_cache::SharedIdentity::parse(name) {
            return usage(format!("--token-cache-shared-identity: {e}"));
        }
        if !providers
            .iter()
            .any(|p| matches!(p, ProviderKind::Ecr | ProviderKind::Acr))
        {
            return usage(
                "--token-cache-shared-identity applies to ecr and acr only: gcr's metadata server is node-local, static and oidc fetch nothing with the node's identity",
            );
        }
        Ok(())
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
}

/// The account in a RAM OIDC provider ARN, `acs:ram::ACCOUNT:oidc-provider/NAME`.
fn alibaba_oidc_provider_account(arn: &str) -> Option<&str> {
    let rest = arn.strip_prefix("acs:ram::")?;
    let (account, name) = rest.split_once(":oidc-provider/")?;
    let ok = !account.is_empty()
        && account.bytes().all(|b| b.is_ascii_digit())
        && !name.is_empty()
        && !name.contains(['/', ':', ' ']);
    ok.then_some(account)
}

/// The host of an `--alibaba-instance HOST[:PORT]=cri-ID` value, lower-cased as the kubelet
/// compares hosts; `None` unless HOST is a plain host name (no scheme, path or glob), PORT digits,
/// and the ID `cri-` and letters or digits.
fn alibaba_instance_host(value: &str) -> Option<String> {
    let (host_port, id) = value.split_once('=')?;
    let (host, port_ok) = match host_port.split_once(':') {
        Some((host, port)) => (
            host,
            !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit()),
        ),
        None => (host_port, true),
    };
    let host_ok = port_ok
        && !host.is_empty()
        && host.contains('.')
        && !host.starts_with(['.', '-'])
        && !host.ends_with(['.', '-'])
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
    let id_ok = id
        .strip_prefix("cri-")
        .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric()));
    (host_ok && id_ok).then(|| host_port.to_ascii_lowercase())
}

/// A mirror's source host (with port, if given as `host:port=destination`), read with the
/// providers' own parser: one entry per option.
fn mirror_source(option: &str, destination: &str, value: &str) -> Result<String, CommandError> {
    match kcp_provider_args::mirror::parse_entry(value) {
        Some(mirror) => Ok(mirror.source),
        None => usage(format!(
            "{option} expects SOURCE:{destination} (or SOURCE:PORT={destination}), got {value:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn alibaba_values_have_their_shapes() {
        assert_eq!(
            alibaba_oidc_provider_account("acs:ram::1234567890123456:oidc-provider/ack-rrsa-c1"),
            Some("1234567890123456")
        );
        for bad in [
            "acs:ram::12a:oidc-provider/x",
            "acs:ram::12:oidc-provider/",
            "acs:ram::12:role/x",
            "arn:aws:iam::123456789012:oidc-provider/x",
            "acs:ram:::oidc-provider/x",
        ] {
            assert_eq!(alibaba_oidc_provider_account(bad), None, "{bad}");
        }
        assert_eq!(
            alibaba_instance_host("Registry.Example.com=cri-abc123").as_deref(),
            Some("registry.example.com")
        );
        assert_eq!(
            alibaba_instance_host("registry.example.com:5000=cri-a").as_deref(),
            Some("registry.example.com:5000")
        );
        for bad in [
            "registry.example.com",
            "registry.example.com=abc",
            "registry.example.com=cri-",
            "https://registry.example.com=cri-a",
            "registry.example.com:=cri-a",
            "registry.example.com:50a=cri-a",
            "*.example.com=cri-a",
            "localhost=cri-a",
            "=cri-a",
        ] {
            assert_eq!(alibaba_instance_host(bad), None, "{bad}");
        }
    }
}
