//! What `doctor` found on a node, as one value: the kubelet, its flags and gates, each
//! provider's binary, the problems and warnings, and the `--image` runs. `doctor` and
//! `doctor_fleet` fill it and `report` prints it; it sits below all three so that none of them
//! has to name another to share it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use kcp_kubelet_emulation::config::{Config, LoadError};
use kcp_kubelet_emulation::validate::{Finding, Validation};

use crate::explain::MatchReport;
use crate::install::Machine;
use crate::run::{ProviderRun, Verdict};

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
    /// Each provider of a config the kubelet can read, in config order, so that a healthy
    /// report still says what was checked.
    pub providers: Vec<ProviderBinary>,
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

/// One provider entry of the kubelet's config and the binary the kubelet would exec for it.
#[derive(Debug, Clone)]
pub struct ProviderBinary {
    /// The entry's `name`.
    pub name: String,
    /// The binary's path as the node sees it (in the kubelet's bin dir).
    pub binary: String,
    /// Whether the kubelet's start-up check on it would pass.
    pub state: BinaryState,
    /// What the file is, when it could be read.
    pub format: Option<BinaryFormat>,
    /// The entry's `matchImages`: the images it is run for.
    pub match_images: Vec<String>,
}

/// A provider binary as the kubelet's start-up check (`exec.LookPath`) finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BinaryState {
    /// A file with an execute bit.
    Executable,
    /// A file without one.
    NotExecutable,
    /// A directory where the binary belongs.
    Directory,
    /// Nothing there.
    Missing,
    /// It could not be inspected; the error says why.
    Unreadable(String),
}

/// What a provider binary's first bytes say it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BinaryFormat {
    /// A Linux executable for this architecture.
    Elf(Machine),
    /// A Windows executable for this architecture.
    Pe(Machine),
    /// A script: the interpreter line after `#!`.
    Script(String),
    /// Anything else.
    Unknown,
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

    /// Records what makes a pull fail or go anonymous (`provider`: whose entry it is about).
    pub fn problem(&mut self, provider: Option<&str>, message: impl Into<String>) {
        self.problems.push(Finding {
            provider: provider.map(str::to_owned),
            message: message.into(),
        });
    }

    /// Records what is worth knowing but leaves the pull working.
    pub fn warning(&mut self, provider: Option<&str>, message: impl Into<String>) {
        self.warnings.push(Finding {
            provider: provider.map(str::to_owned),
            message: message.into(),
        });
    }
}
