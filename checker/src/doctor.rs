//! `doctor`: looks at a node (or its root mounted at `--host-root`) the way its running kubelet
//! will on the next pull, and says in one report what will happen.
//!
//! It finds the kubelet in `<root>/proc/*/cmdline`, reads its credential-provider flags and the
//! feature gates of its flags and `--config` file, learns its version (`--kubelet-version`, else
//! `<exe> --version`), then judges the config as that kubelet would (`kcp_kubelet_emulation::kubelet_version`)
//! and adds what the kubelet only finds out at pull time: binaries built for another architecture
//! and the RBAC each token audience needs. k3s runs its kubelet inside the `k3s` process and sets
//! the flags itself when its fixed paths exist, so those are assumed there.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kcp_kubelet::duration::GoDuration;
use kcp_kubelet::yaml11::{self, Node};
use kcp_kubelet_emulation::config::{self, Config, LoadError};
use kcp_kubelet_emulation::kubelet_version::Kubelet;
use kcp_kubelet_emulation::validate::{self, Finding, Validation};

use crate::explain::{self, MatchReport};
use crate::install::{HOST_ELF, Machine, elf_machine, resolve_under};
use crate::run::{self, ProviderRun, RunOptions, Verdict};

/// How long a provider may take when `--image` runs it: the kubelet's fixed exec timeout.
const PLUGIN_TIMEOUT: Duration = Duration::from_secs(60);

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

/// The kubelet found, as its process shows it.
#[derive(Debug, Clone, Default)]
pub struct KubeletProcess {
    /// Its process id.
    pub pid: String,
    /// Its command line.
    pub argv: Vec<String>,
    /// Its executable as the node sees it (`/proc/<pid>/exe`).
    pub exe: Option<PathBuf>,
    /// True for k3s, whose kubelet runs inside the `k3s` process.
    pub embedded_k3s: bool,
}

/// Everything `doctor` found.
#[derive(Debug, Default)]
pub struct Diagnosis {
    /// The host root looked at.
    pub host_root: PathBuf,
    /// The kubelet, if one runs.
    pub kubelet: Option<KubeletProcess>,
    /// Its version (`1.32`), and where it came from.
    pub version: Option<(String, String)>,
    /// `--image-credential-provider-config` as the node sees it.
    pub config_path: Option<String>,
    /// `--image-credential-provider-bin-dir` as the node sees it.
    pub bin_dir: Option<String>,
    /// Feature gates: the `--config` file's, then the flag's, then doctor's own.
    pub feature_gates: BTreeMap<String, bool>,
    /// `imagePullCredentialsVerificationPolicy` from the `--config` file.
    pub pull_credentials_policy: Option<String>,
    /// What the kubelet makes of its config, when it has one.
    pub judged: Option<Result<(Config, Validation), LoadError>>,
    /// What makes a pull fail or go anonymous.
    pub problems: Vec<Finding>,
    /// What the kubelet accepts but never works, and other things to know.
    pub warnings: Vec<Finding>,
    /// ClusterRole and ClusterRoleBinding per token audience, as YAML to apply.
    pub rbac: Option<String>,
    /// One entry per `--image`, when the kubelet's config could be read.
    pub images: Vec<ImageCheck>,
    /// With `--fleet-tokens`: what is published and which entries the providers read.
    pub fleet: Vec<String>,
}

/// What the kubelet does for one `--image`: the providers it runs and how each run ends.
#[derive(Debug)]
pub struct ImageCheck {
    /// Which providers match, and why the others do not.
    pub matched: MatchReport,
    /// The matching providers' runs, in config order.
    pub runs: Vec<ProviderRun>,
}

/// A provider run's verdict as `doctor` reports it.
pub fn run_verdict(run: &ProviderRun) -> &'static str {
    match run.verdict {
        Verdict::Skipped(_) => "not run",
        _ if run.usable() => "healthy",
        _ => "broken",
    }
}

impl ImageCheck {
    /// `anonymous` (no provider matches), `broken` (a run fails or gives nothing for the image),
    /// `not run` (every match needs a pod's token) or `healthy`.
    pub fn verdict(&self) -> &'static str {
        let verdicts: Vec<&str> = self.runs.iter().map(run_verdict).collect();
        if verdicts.is_empty() {
            "anonymous"
        } else if verdicts.contains(&"broken") {
            "broken"
        } else if verdicts.iter().all(|v| *v == "not run") {
            "not run"
        } else {
            "healthy"
        }
    }
}

impl Diagnosis {
    /// True when the next pull will use the providers as configured.
    pub fn healthy(&self) -> bool {
        self.problems.is_empty()
    }

    pub(crate) fn problem(&mut self, provider: Option<&str>, message: impl Into<String>) {
        self.problems.push(Finding {
            provider: provider.map(str::to_owned),
            message: message.into(),
        });
    }

    pub(crate) fn warning(&mut self, provider: Option<&str>, message: impl Into<String>) {
        self.warnings.push(Finding {
            provider: provider.map(str::to_owned),
            message: message.into(),
        });
    }
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
    let Some(kubelet) = find_kubelet(root) else {
        d.problem(
            None,
            format!(
                "no kubelet process found in {}: is this a node, and is the host's /proc visible (hostPID)?",
                root.join("proc").display()
            ),
        );
        return Ok(d);
    };
    d.config_path = flag_value(&kubelet.argv, "image-credential-provider-config");
    d.bin_dir = flag_value(&kubelet.argv, "image-credential-provider-bin-dir");
    if kubelet.embedded_k3s && d.config_path.is_none() && d.bin_dir.is_none() {
        // k3s passes both flags to its kubelet only when these exist.
        let (config, bin) = (
            "/var/lib/rancher/credentialprovider/config.yaml",
            "/var/lib/rancher/credentialprovider/bin",
        );
        if under(root, config).is_some_and(|p| p.is_file())
            && under(root, bin).is_some_and(|p| p.is_dir())
        {
            d.config_path = Some(config.to_owned());
            d.bin_dir = Some(bin.to_owned());
        }
    }
    read_kubelet_configuration(root, &kubelet, &mut d);
    if let Some(flag) = flag_value(&kubelet.argv, "feature-gates") {
        merge_gates(&flag, &mut d.feature_gates)?;
    }
    if let Some(extra) = &args.feature_gates {
        merge_gates(extra, &mut d.feature_gates)?;
    }
    d.version = match &args.kubelet_version {
        Some(v) => Some((v.clone(), "--kubelet-version".to_owned())),
        None => ask_version(root, &kubelet, args, &mut d.warnings),
    };
    d.kubelet = Some(kubelet);
    let gates = d
        .feature_gates
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let gates = (!gates.is_empty()).then_some(gates);
    let judge_as = match Kubelet::new(
        d.version.as_ref().map(|(v, _)| v.as_str()),
        gates.as_deref(),
    ) {
        Ok(k) => k,
        Err(e) if args.kubelet_version.is_some() || args.feature_gates.is_some() => return Err(e),
        Err(e) => {
            d.warnings.push(Finding {
                provider: None,
                message: format!("{e}; judged as the newest kubelet instead"),
            });
            Kubelet::newest()
        }
    };
    let (Some(config_path), Some(bin_dir)) = (d.config_path.clone(), d.bin_dir.clone()) else {
        d.problem(
            None,
            "the kubelet runs without --image-credential-provider-config and --image-credential-provider-bin-dir: no plugin runs, so private images are pulled anonymously (or with pull secrets only)",
        );
        return Ok(d);
    };
    let config_file = under(root, &config_path).unwrap_or_else(|| root.join(&config_path));
    let bin = under(root, &bin_dir).unwrap_or_else(|| root.join(&bin_dir));
    match config::load_for(&config_file, &judge_as) {
        Err(e) => {
            d.problem(
                None,
                format!("the kubelet cannot read its config and exits 1 at start: {e}"),
            );
            d.judged = Some(Err(e));
        }
        Ok(config) => {
            let mut v = validate::validate_for(&config, Some(&bin), &judge_as);
            crate::alibaba_entry::check(&config, &mut v);
            if let Some(m) = v.kubelet_message() {
                d.problem(None, format!("the kubelet exits 1 at start: {m}"));
            }
            for f in v.registration.iter().chain(&v.arguments) {
                d.problems.push(f.clone());
            }
            d.warnings.extend(v.warnings.iter().cloned());
            architectures(root, &bin, &config, &mut d);
            token_caches(root, &config, &mut d);
            metrics_files(root, &config, &mut d);
            for image in &args.images {
                check_image(&bin, &config, image, &mut d)?;
            }
            let env = crate::doctor_fleet::kubelet_environment(root, d.kubelet.as_ref());
            let fleet_tokens = args.fleet_tokens.as_deref();
            crate::doctor_fleet::check(
                root,
                &bin,
                &config,
                &env,
                fleet_tokens,
                &args.images,
                &mut d,
            );
            d.rbac = rbac(&config);
            d.judged = Some(Ok((config, v)));
        }
    }
    Ok(d)
}

/// `node_path` under the host root, symlinks followed as on the node.
fn under(root: &Path, node_path: &str) -> Option<PathBuf> {
    resolve_under(root, Path::new(node_path))
}

/// The first process (lowest pid) that is a kubelet: its argv[0] is `kubelet`, or it is k3s's
/// `server`/`agent`, which embeds one.
fn find_kubelet(root: &Path) -> Option<KubeletProcess> {
    let mut pids: Vec<(u64, String)> = std::fs::read_dir(root.join("proc"))
        .ok()?
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            Some((name.parse().ok()?, name))
        })
        .collect();
    pids.sort();
    let mut k3s = None;
    for (_, pid) in pids {
        let dir = root.join("proc").join(&pid);
        let Ok(raw) = std::fs::read(dir.join("cmdline")) else {
            continue;
        };
        let argv: Vec<String> = raw
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>();
        let argv: Vec<String> = match argv.iter().rposition(|a| !a.is_empty()) {
            Some(last) => argv[..=last].to_vec(),
            None => continue,
        };
        let base = |a: &str| {
            Path::new(a)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        };
        let exe = std::fs::read_link(dir.join("exe")).ok();
        let process = KubeletProcess {
            pid: pid.clone(),
            argv: argv.clone(),
            exe,
            embedded_k3s: false,
        };
        match base(&argv[0]).as_deref() {
            Some("kubelet" | "kubelet.exe") => return Some(process),
            Some("k3s")
                if k3s.is_none()
                    && matches!(argv.get(1).map(String::as_str), Some("server" | "agent")) =>
            {
                k3s = Some(KubeletProcess {
                    embedded_k3s: true,
                    ..process
                });
            }
            _ => {}
        }
    }
    k3s
}

/// A flag's value as the kubelet takes it: `--name=value` or `--name value`, the last one wins.
fn flag_value(argv: &[String], name: &str) -> Option<String> {
    let long = format!("--{name}");
    let mut found = None;
    let mut args = argv.iter().skip(1);
    while let Some(arg) = args.next() {
        if let Some(value) = arg.strip_prefix(&format!("{long}=")) {
            found = Some(value.to_owned());
        } else if *arg == long {
            found = args.next().cloned();
        }
    }
    found
}

/// `Name=bool,...` into `gates`, later values winning.
fn merge_gates(text: &str, gates: &mut BTreeMap<String, bool>) -> Result<(), String> {
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, value) = item
            .split_once('=')
            .and_then(|(n, v)| Some((n.trim(), v.trim().parse::<bool>().ok()?)))
            .ok_or_else(|| format!("--feature-gates: expected Name=true|false, got {item:?}"))?;
        gates.insert(name.to_owned(), value);
    }
    Ok(())
}

/// `featureGates` and `imagePullCredentialsVerificationPolicy` of the `--config` file.
fn read_kubelet_configuration(root: &Path, kubelet: &KubeletProcess, d: &mut Diagnosis) {
    let Some(path) = flag_value(&kubelet.argv, "config") else {
        return;
    };
    let file = under(root, &path).unwrap_or_else(|| root.join(&path));
    let parsed = std::fs::read_to_string(&file)
        .map_err(|e| e.to_string())
        .and_then(|text| yaml11::parse(&text));
    let doc = match parsed {
        Ok(doc) => doc,
        Err(e) => {
            d.warnings.push(Finding {
                provider: None,
                message: format!("cannot read the kubelet's --config {path}: {e}; its featureGates are not taken into account"),
            });
            return;
        }
    };
    let Node::Map(map) = &doc.root else {
        return;
    };
    if let Some(Node::Map(gates)) = yaml11::get(map, "featureGates") {
        for entry in gates {
            if let (Ok(name), Node::Bool(on)) = (yaml11::key_string(&entry.key), &entry.value) {
                d.feature_gates.insert(name, *on);
            }
        }
    }
    if let Some(Node::Str(policy)) = yaml11::get(map, "imagePullCredentialsVerificationPolicy") {
        d.pull_credentials_policy = Some(policy.clone());
    }
}

/// The kubelet's version from `<exe> --version` (`Kubernetes v1.32.4`, k3s: `k3s version
/// v1.32.4+k3s1`), run only when this machine can run it.
fn ask_version(
    root: &Path,
    kubelet: &KubeletProcess,
    args: &DoctorArgs,
    warnings: &mut Vec<Finding>,
) -> Option<(String, String)> {
    let mut warn = |why: String| {
        warnings.push(Finding {
            provider: None,
            message: format!(
                "{why}; judged as the newest kubelet (pass --kubelet-version to say which)"
            ),
        });
        None
    };
    let Some(exe) = &kubelet.exe else {
        return warn(format!("cannot read /proc/{}/exe", kubelet.pid));
    };
    let Some(path) = resolve_under(root, exe) else {
        return warn(format!("cannot find {} under the host root", exe.display()));
    };
    if let Some(m) = machine_of(&path)
        && Some(m) != own_machine()
    {
        return warn(format!(
            "the kubelet binary is built for {}, which this checker cannot run",
            m.name()
        ));
    }
    let timeout = args
        .version_timeout
        .to_std()
        .unwrap_or(Duration::from_secs(10));
    let command = format!("{} --version", exe.display());
    match run_with_timeout(&path, timeout) {
        Ok(out) => match version_in(&out) {
            Some(v) => Some((v, command)),
            None => warn(format!("{command} printed no version: {:?}", out.trim())),
        },
        Err(e) => warn(format!("{command}: {e}")),
    }
}

/// `1.N` from the first `v1.N` in `text`.
fn version_in(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || c == '+' || c == '-')
        .filter_map(|word| word.strip_prefix("v1."))
        .find_map(|rest| {
            let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
            (!minor.is_empty()).then(|| format!("1.{minor}"))
        })
}

/// Runs `path --version`, killing it after `timeout`.
fn run_with_timeout(path: &Path, timeout: Duration) -> Result<String, String> {
    let mut child = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {timeout:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_string(&mut out).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

fn machine_of(path: &Path) -> Option<Machine> {
    let mut head = [0u8; 20];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .ok()?;
    elf_machine(&head)
}

/// This checker's own architecture, as an ELF machine.
fn own_machine() -> Option<Machine> {
    let m = match std::env::consts::ARCH {
        "x86" => 3,
        "arm" => 40,
        "x86_64" => 62,
        "aarch64" => 183,
        "riscv64" => 243,
        "powerpc64" => 21,
        "s390x" => 22,
        _ => return None,
    };
    Some(Machine(m))
}

/// The node's architecture, from the first ELF file of [`HOST_ELF`] under the root.
fn host_machine(root: &Path) -> Option<Machine> {
    HOST_ELF
        .iter()
        .filter_map(|node| resolve_under(root, Path::new(node)))
        .find_map(|p| machine_of(&p))
}

/// Providers whose binary is an ELF file for another architecture: every exec fails.
fn architectures(root: &Path, bin: &Path, config: &Config, d: &mut Diagnosis) {
    let Some(host) = host_machine(root) else {
        return;
    };
    for p in &config.providers {
        let path = validate::plugin_binary(bin, &p.name);
        if let Some(m) = machine_of(&path)
            && m != host
        {
            d.problem(
                Some(&p.name),
                format!(
                    "{} is built for {}, but the node is {}: every exec fails with \"exec format error\" and the pull goes anonymous",
                    path.display(),
                    m.name(),
                    host.name()
                ),
            );
        }
    }
}

/// Providers whose token cache directory (`--token-cache-dir`, or the env the provider reads)
/// cannot be used: the provider then fetches a new token on every exec. The kubelet runs plugins
/// as root, so the directory must be root's; a symlink is not followed.
#[cfg(unix)]
fn token_caches(root: &Path, config: &Config, d: &mut Diagnosis) {
    use std::os::unix::fs::MetadataExt as _;
    for p in &config.providers {
        let Some(dir) =
            provider_setting(p, "token-cache-dir", "CREDENTIAL_PROVIDER_TOKEN_CACHE_DIR")
        else {
            continue;
        };
        let on_host = root.join(dir.trim_start_matches('/'));
        let reason = match std::fs::symlink_metadata(&on_host) {
            Err(_) => None,
            Ok(meta) if !meta.is_dir() => {
                Some("it is not a directory (a symlink is not followed)".to_owned())
            }
            Ok(meta) if meta.uid() != 0 => Some(format!(
                "it is owned by uid {}, not by root, whom the kubelet runs plugins as",
                meta.uid()
            )),
            Ok(_) => None,
        };
        if let Some(reason) = reason {
            d.warning(
                Some(&p.name),
                format!("token cache directory {dir}: {reason}; the provider fetches a new token on every exec"),
            );
        }
    }
}

#[cfg(not(unix))]
fn token_caches(_root: &Path, _config: &Config, _d: &mut Diagnosis) {}

/// A shared provider flag as the provider takes it: `--flag` in its `args` (either spelling,
/// the last wins), else the config's `env` entry for it (the last wins). `validate` reads oidc's
/// registries file through it (oidc_file.rs).
pub(crate) fn provider_setting(p: &config::Provider, flag: &str, env: &str) -> Option<String> {
    let argv: Vec<String> = std::iter::once(String::new())
        .chain(p.args.iter().cloned())
        .collect();
    flag_value(&argv, flag).or_else(|| {
        p.env
            .iter()
            .rev()
            .find(|(name, _)| name == env)
            .map(|(_, value)| value.clone())
    })
}

/// Providers whose metrics file (`--metrics-file`, or the env the provider reads) cannot be
/// written: its directory must exist as a real directory root can write in (the kubelet runs
/// plugins as root), and the file, if there, must be a regular file. The provider then loses
/// its metrics but still answers, so these are warnings.
#[cfg(unix)]
fn metrics_files(root: &Path, config: &Config, d: &mut Diagnosis) {
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
    for p in &config.providers {
        let Some(file) = provider_setting(p, "metrics-file", "CREDENTIAL_PROVIDER_METRICS_FILE")
        else {
            continue;
        };
        let node_file = Path::new(&file);
        let reason = if !node_file.is_absolute() {
            Some(
                "it is not an absolute path, so it depends on the kubelet's working directory"
                    .to_owned(),
            )
        } else {
            let dir = node_file.parent().unwrap_or(Path::new("/"));
            let on_host = |p: &Path| root.join(p.strip_prefix("/").unwrap_or(p));
            match std::fs::symlink_metadata(on_host(dir)) {
                Err(e) => Some(format!(
                    "its directory {} cannot be used: {e}",
                    dir.display()
                )),
                Ok(meta) if !meta.is_dir() => Some(format!(
                    "its directory {} is not a directory (a symlink is not followed)",
                    dir.display()
                )),
                Ok(meta) if meta.uid() != 0 => Some(format!(
                    "its directory {} is owned by uid {}, not by root, whom the kubelet runs plugins as",
                    dir.display(),
                    meta.uid()
                )),
                Ok(_) if read_only(&on_host(dir)) => Some(format!(
                    "its directory {} is on a read-only filesystem",
                    dir.display()
                )),
                Ok(_) => match std::fs::symlink_metadata(on_host(node_file)) {
                    Ok(meta) if !meta.file_type().is_file() => Some(format!(
                        "it is a {}, not a regular file",
                        if meta.file_type().is_symlink() {
                            "symlink"
                        } else if meta.file_type().is_fifo() {
                            "FIFO"
                        } else if meta.is_dir() {
                            "directory"
                        } else {
                            "special file"
                        }
                    )),
                    _ => None,
                },
            }
        };
        if let Some(reason) = reason {
            d.warning(
                Some(&p.name),
                format!("metrics file {file}: {reason}; the provider still answers, but its metrics are not written"),
            );
        }
    }
}

#[cfg(not(unix))]
fn metrics_files(_root: &Path, _config: &Config, _d: &mut Diagnosis) {}

/// True when `dir` is on a filesystem mounted read-only (where even root cannot write).
#[cfg(unix)]
fn read_only(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `path` is a NUL-terminated string and `stat` a zeroed struct statvfs fills.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the duration of the call.
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut stat) };
    rc == 0 && stat.f_flag & libc::ST_RDONLY != 0
}

/// Runs every provider matching `image` as the kubelet would, with the `run` command's code, and
/// records what would make its pull fail or go anonymous. No service-account token is sent:
/// doctor cannot mint a pod's token.
fn check_image(bin: &Path, config: &Config, image: &str, d: &mut Diagnosis) -> Result<(), String> {
    let matched = explain::match_providers(&config.providers, image)?;
    let opts = RunOptions {
        bin_dir: bin.to_path_buf(),
        sa_token: None,
        sa_annotations: BTreeMap::new(),
        timeout: PLUGIN_TIMEOUT,
        show_secrets: false,
    };
    let names = matched.matching();
    let mut runs: Vec<ProviderRun> = config
        .providers
        .iter()
        .filter(|p| names.contains(&p.name.as_str()))
        .map(|p| run::run_provider(p, &matched.normalized, &opts))
        .collect();
    if runs.is_empty() {
        d.problem(
            None,
            format!(
                "image {image}: no provider matches {}, so the kubelet pulls it anonymously",
                matched.normalized
            ),
        );
    }
    for r in &mut runs {
        match (&r.verdict, &r.kubelet_error) {
            (Verdict::Skipped(_), _) => {
                r.verdict = Verdict::Skipped("requireServiceAccount is true and doctor cannot mint a pod's service-account token, so it cannot run this provider (use `run --sa-token`)".to_owned());
                d.warning(
                    Some(&r.name),
                    format!("image {image}: not run from doctor: requireServiceAccount is true and doctor cannot mint a pod's service-account token (check it with `run --sa-token`)"),
                );
            }
            (_, Some(error)) => d.problem(
                Some(&r.name),
                format!("image {image}: the kubelet would log: {}", error.trim_end()),
            ),
            _ if !r.usable() => d.problem(
                Some(&r.name),
                format!(
                    "image {image}: the answer was accepted but none of its credentials apply to {}",
                    matched.normalized
                ),
            ),
            _ => {}
        }
    }
    d.images.push(ImageCheck { matched, runs });
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_take_both_spellings_and_the_last_wins() {
        let argv: Vec<String> = [
            "kubelet",
            "--image-credential-provider-config=/a",
            "--image-credential-provider-config",
            "/b",
            "--config",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        assert_eq!(
            flag_value(&argv, "image-credential-provider-config").as_deref(),
            Some("/b")
        );
        assert_eq!(flag_value(&argv, "config"), None);
    }

    #[test]
    fn versions_are_read_from_kubelet_and_k3s_banners() {
        assert_eq!(version_in("Kubernetes v1.32.4\n").as_deref(), Some("1.32"));
        assert_eq!(
            version_in("k3s version v1.31.2+k3s1 (abc)\ngo version go1.22").as_deref(),
            Some("1.31")
        );
        assert_eq!(version_in("nothing"), None);
    }
}
