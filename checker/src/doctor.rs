//! `doctor`: looks at a node (or its root mounted at `--host-root`) the way its running kubelet
//! will on the next pull, and says in one report what will happen.
//!
//! It finds the kubelet in `<root>/proc/*/cmdline`, reads its credential-provider flags and the
//! feature gates of its flags and `--config` file, learns its version (`--kubelet-version`, else
//! `<exe> --version`), then judges the config as that kubelet would (`kcp_kubelet_emulation::kubelet_version`)
//! and adds what the kubelet only finds out at pull time: binaries built for another architecture
//! and the RBAC each token audience needs. k3s runs its kubelet inside the `k3s` process and sets
//! the flags itself when its fixed paths exist, so those are assumed there.
//!
//! This file holds the order of the work; the steps are its children: `kubelet` (the process,
//! its flags, gates and version), `binaries` (each provider's binary and architecture),
//! `node_files` (token cache and metrics paths) and `images` (`--image` runs). What they find
//! goes into `crate::diagnosis::Diagnosis`, which `doctor_fleet` fills too and `report` prints.

mod binaries;
mod images;
mod kubelet;
mod node_files;

use std::path::{Path, PathBuf};

use kcp_kubelet::duration::GoDuration;
use kcp_kubelet_emulation::config::{self, Config};
use kcp_kubelet_emulation::kubelet_version::Kubelet;
use kcp_kubelet_emulation::validate::{self, Finding};

use crate::argv::flag_value;
use crate::diagnosis::Diagnosis;
use crate::install::resolve_under;
use crate::{alibaba_entry, doctor_fleet, explain};

/// `doctor`'s options.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Where the node's root filesystem is mounted (the DaemonSet mounts it at /host).
    #[arg(long, default_value = "/")]
    pub host_root: PathBuf,
    /// The kubelet's version, instead of asking its binary (1.26 to 1.37).
    #[arg(long, value_name = "VERSION")]
    pub kubelet_version: Option<String>,
    /// Feature gates to assume on top of the kubelet's own (Name=bool,...).
    #[arg(long, value_name = "NAME=BOOL,...")]
    pub feature_gates: Option<String>,
    /// How long `<kubelet> --version` may take.
    #[arg(long, default_value = "10s")]
    pub version_timeout: GoDuration,
    /// Run every provider matching IMAGE as the kubelet would, without a service-account token
    /// (repeatable).
    #[arg(long = "image", value_name = "IMAGE")]
    pub images: Vec<String>,
    /// Fleet mode: the token controller's Secret as mounted here (the DaemonSet's /fleet-tokens),
    /// instead of the copies in the providers' token cache: whether this node's providers read
    /// the entries it publishes (with --image: which entry each matching provider reads).
    #[arg(long, value_name = "DIR")]
    pub fleet_tokens: Option<PathBuf>,
}

/// Runs the diagnosis; `Err` is a usage error.
pub fn diagnose(args: &DoctorArgs) -> Result<Diagnosis, String> {
    let root = &args.host_root;
    for image in &args.images {
        explain::normalize(image).map_err(|e| format!("--image: {e}"))?;
    }
    if !root.join("proc").is_dir() {
        return Err(format!(
            "--host-root {}: no proc directory there (is it the node's root filesystem, with the host's /proc mounted?)",
            root.display()
        ));
    }
    let mut d = Diagnosis {
        host_root: root.clone(),
        ..Diagnosis::default()
    };
    let Some(kubelet) = kubelet::find_kubelet(root) else {
        d.problem(
            None,
            format!(
                "no kubelet process found in {}: is this a node, and is the host's /proc visible (hostPID)?",
                root.join("proc").display()
            ),
        );
        return Ok(d);
    };
    kubelet::provider_flags(root, &kubelet, &mut d);
    kubelet::read_kubelet_configuration(root, &kubelet, &mut d);
    if let Some(flag) = flag_value(&kubelet.argv, "feature-gates") {
        kubelet::merge_gates(&flag, &mut d.feature_gates)?;
    }
    if let Some(extra) = &args.feature_gates {
        kubelet::merge_gates(extra, &mut d.feature_gates)?;
    }
    d.version = match &args.kubelet_version {
        Some(v) => Some((v.clone(), "--kubelet-version".to_owned())),
        None => kubelet::ask_version(root, &kubelet, args, &mut d.warnings),
    };
    d.kubelet = Some(kubelet);
    let judge_as = judge_as(args, &mut d)?;
    let (Some(config_path), Some(bin_dir)) = (d.config_path.clone(), d.bin_dir.clone()) else {
        d.problem(
            None,
            "the kubelet runs without --image-credential-provider-config and --image-credential-provider-bin-dir: no plugin runs, so private images are pulled anonymously (or with pull secrets only)",
        );
        return Ok(d);
    };
    judge_config(args, &config_path, &bin_dir, &judge_as, &mut d)?;
    Ok(d)
}

/// The kubelet to judge the config as: the version and gates found; when they name no kubelet
/// this checker knows, the newest (a warning), unless doctor's own options named it (`Err`).
fn judge_as(args: &DoctorArgs, d: &mut Diagnosis) -> Result<Kubelet, String> {
    let gates = d
        .feature_gates
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let gates = (!gates.is_empty()).then_some(gates);
    match Kubelet::new(
        d.version.as_ref().map(|(v, _)| v.as_str()),
        gates.as_deref(),
    ) {
        Ok(k) => Ok(k),
        Err(e) if args.kubelet_version.is_some() || args.feature_gates.is_some() => Err(e),
        Err(e) => {
            d.warnings.push(Finding {
                provider: None,
                message: format!("{e}; judged as the newest kubelet instead"),
            });
            Ok(Kubelet::newest())
        }
    }
}

/// The config at `config_path` with the binaries in `bin_dir` (both as the node sees them),
/// judged as `judge_as`, then what the kubelet only finds at pull time; `Err` is a usage error
/// from `--image`.
fn judge_config(
    args: &DoctorArgs,
    config_path: &str,
    bin_dir: &str,
    judge_as: &Kubelet,
    d: &mut Diagnosis,
) -> Result<(), String> {
    let root = &args.host_root;
    let config_file = under(root, config_path).unwrap_or_else(|| root.join(config_path));
    let bin = under(root, bin_dir).unwrap_or_else(|| root.join(bin_dir));
    let config = match config::load_for(&config_file, judge_as) {
        Ok(config) => config,
        Err(e) => {
            d.problem(
                None,
                format!("the kubelet cannot read its config and exits 1 at start: {e}"),
            );
            d.judged = Some(Err(e));
            return Ok(());
        }
    };
    let mut v = validate::validate_for(&config, Some(&bin), judge_as);
    alibaba_entry::check(&config, &mut v);
    if let Some(m) = v.kubelet_message() {
        d.problem(None, format!("the kubelet exits 1 at start: {m}"));
    }
    for f in v.registration.iter().chain(&v.arguments) {
        d.problems.push(f.clone());
    }
    if let Some(f) = &v.fatal {
        d.problem(
            f.provider.as_deref(),
            format!(
                "the kubelet passes validation, then dies at registration with exit status 255: {}",
                f.message
            ),
        );
    }
    d.warnings.extend(v.warnings.iter().cloned());
    d.providers = binaries::inspect(bin_dir, &bin, &config);
    binaries::architectures(root, &bin, d);
    node_files::token_caches(root, &config, d);
    node_files::metrics_files(root, &config, d);
    for image in &args.images {
        images::check_image(&bin, &config, image, d)?;
    }
    let env = doctor_fleet::kubelet_environment(root, d.kubelet.as_ref());
    let fleet = doctor_fleet::FleetCheck {
        root,
        bin: &bin,
        config: &config,
        kubelet_env: &env,
        fleet_tokens: args.fleet_tokens.as_deref(),
        images: &args.images,
    };
    fleet.check(d);
    d.rbac = rbac(&config);
    d.judged = Some(Ok((config, v)));
    Ok(())
}

/// `node_path` under the host root, symlinks followed as on the node.
fn under(root: &Path, node_path: &str) -> Option<PathBuf> {
    resolve_under(root, Path::new(node_path))
}

/// The RBAC the nodes need for each token audience (the API server's node audience
/// restriction), as YAML; `None` without tokenAttributes.
fn rbac(config: &Config) -> Option<String> {
    let audiences: std::collections::BTreeSet<&str> = config
        .providers
        .iter()
        .filter_map(|p| p.token_attributes.as_ref())
        .map(|t| t.audience.as_str())
        .filter(|a| !a.is_empty())
        .collect();
    if audiences.is_empty() {
        return None;
    }
    let resources: Vec<String> = audiences.iter().map(|a| format!("{a:?}")).collect();
    let name = "kubelet-credential-provider-audiences";
    Some(format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {name}\nrules:\n  - apiGroups: [\"\"]\n    resources: [{}]\n    verbs: [\"request-serviceaccounts-token-audience\"]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {name}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {name}\nsubjects:\n  - apiGroup: rbac.authorization.k8s.io\n    kind: Group\n    name: system:nodes\n",
        resources.join(", ")
    ))
}
