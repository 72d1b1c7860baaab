//! `credential-provider-check`: validates a kubelet `CredentialProviderConfig` and runs its
//! plugins exactly as the kubelet would, explaining every failure the kubelet hides.
//!
//! - `validate --config PATH [--bin-dir DIR]`: strict decode and the kubelet's 22 rules, and
//!   the `args` of this project's providers checked against their command lines (and
//!   oidc-credential-provider's registries file against its rules, alibaba-credential-provider's
//!   service-account mode against what RRSA needs); with
//!   `--kubelet-version X.Y [--feature-gates ...]` (also on `run`), as that kubelet has them.
//! - `match --config PATH IMAGE`: which providers the kubelet runs for an image, and why not.
//! - `run --config PATH --bin-dir DIR IMAGE`: exec, decode, keyring and cache, as the kubelet.
//! - `init --provider P [--platform P] [--service-account] ...`: print a config for our providers
//!   from the one table of their defaults, checked by the kubelet's rules before it is printed.
//! - `install --host-root DIR --from DIR --provider P [--platform P] ...`: put the binaries and
//!   `init`'s config on a node whose root is mounted at DIR (the DaemonSet in deploy/); `wait`:
//!   that DaemonSet's main container, which has no shell to sleep in.
//! - `doctor [--host-root DIR] [--image IMAGE]... [--fleet-tokens DIR]`: find the running kubelet,
//!   its flags, gates and version, say what its next pull will do and run the providers matching
//!   each IMAGE (exit 1 when it fails or goes anonymous); in fleet mode, whether the providers read
//!   the entries the token controller publishes.
//!
//! Exit status: 0 yes (valid / a provider matches / usable credentials / config printed), 1 no
//! (for `init`: the kubelet would refuse what the options ask for), 2 usage error. Every error is
//! one line on stderr.

mod alibaba_entry;
mod argv;
mod diagnosis;
mod doctor;
mod doctor_fleet;
mod explain;
mod init;
mod install;
mod oidc_file;
mod report;
mod run;
mod sha256;
mod wait;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use kcp_kubelet::duration::GoDuration;

use kcp_kubelet_emulation::kubelet_version::Kubelet;
use kcp_kubelet_emulation::{config, validate};

use crate::report::Format;

#[derive(Debug, Parser)]
#[command(
    name = "credential-provider-check",
    version,
    about = "Validate a kubelet CredentialProviderConfig and run its plugins exactly as the kubelet would"
)]
struct Cli {
    /// Output format.
    #[arg(long, value_enum, default_value = "human", global = true)]
    output: Format,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Decode the config strictly and apply every kubelet validation rule.
    Validate {
        /// Config file, or (kubelet 1.34+) a directory of .json/.yaml/.yml files.
        #[arg(long)]
        config: PathBuf,
        /// The kubelet's --image-credential-provider-bin-dir: check each binary is there and executable.
        #[arg(long)]
        bin_dir: Option<PathBuf>,
        #[command(flatten)]
        kubelet: KubeletArgs,
    },
    /// Show which providers the kubelet would run for IMAGE, and why each pattern does not match.
    Match {
        /// Config file or directory.
        #[arg(long)]
        config: PathBuf,
        /// The image as in a pod spec, e.g. nginx:1.27.
        image: String,
    },
    /// Exec every matching plugin as the kubelet does and judge its answer.
    Run(RunArgs),
    /// Print a CredentialProviderConfig for this project's providers, from their defaults per platform.
    Init(Box<init::InitArgs>),
    /// Install the providers and init's config on a node whose root filesystem is mounted at
    /// --host-root (atomic, idempotent, never replacing files this project did not write).
    Install(Box<install::InstallArgs>),
    /// Wait for SIGTERM, then exit 0: the DaemonSet's main container after the install; in fleet
    /// mode it copies the token controller's published tokens into the host's token cache meanwhile.
    Wait(wait::WaitArgs),
    /// Find the running kubelet (under --host-root) and say what its next pull will do.
    Doctor(Box<doctor::DoctorArgs>),
}

/// `run`'s options: the config, bin dir and image, and the pod the kubelet would pull for.
#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Config file or directory.
    #[arg(long)]
    config: PathBuf,
    /// The kubelet's --image-credential-provider-bin-dir.
    #[arg(long)]
    bin_dir: PathBuf,
    /// The image as in a pod spec.
    image: String,
    /// A file holding the pod's service-account token (sent only to providers with tokenAttributes).
    #[arg(long)]
    sa_token: Option<PathBuf>,
    /// A service-account annotation KEY=VALUE (repeatable).
    #[arg(long, value_parser = parse_annotation)]
    sa_annotation: Vec<(String, String)>,
    /// Show passwords and the token instead of <redacted>.
    #[arg(long)]
    show_secrets: bool,
    /// Kill a plugin after this long (the kubelet's fixed timeout is 60s).
    #[arg(long, default_value = "60s")]
    timeout: GoDuration,
    #[command(flatten)]
    kubelet: KubeletArgs,
}

/// The kubelet a config is judged for (`validate`, `run`); without them, the newest one.
#[derive(Debug, clap::Args)]
struct KubeletArgs {
    /// Judge the config as this kubelet version does (1.26 to 1.37: 1.32, v1.32, 1.32.4); default: the newest.
    #[arg(long, value_name = "VERSION")]
    kubelet_version: Option<String>,
    /// The kubelet's --feature-gates, e.g. KubeletServiceAccountTokenForCredentialProviders=true.
    #[arg(long, value_name = "NAME=BOOL,...")]
    feature_gates: Option<String>,
}

impl KubeletArgs {
    /// The kubelet to judge for; `Err` is a usage error.
    fn kubelet(&self) -> Result<Kubelet, String> {
        Kubelet::new(
            self.kubelet_version.as_deref(),
            self.feature_gates.as_deref(),
        )
    }
}

fn parse_annotation(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| format!("expected KEY=VALUE, got {text:?}"))
}

/// Exit status for "no": invalid config, no match, no usable credentials.
const NO: u8 = 1;
/// Exit status for a usage error (bad image, unreadable token file); clap uses 2 too.
const USAGE: u8 = 2;

/// Why `init` or `install` stopped: a usage error (exit 2) or a refusal (exit 1). Nothing was
/// written unless the message says so.
#[derive(Debug)]
pub enum CommandError {
    /// Bad or conflicting options.
    Usage(String),
    /// The node, or the config the options make, is not one this tool may write; the message
    /// says why.
    Refused(String),
}

fn usage<T>(message: impl Into<String>) -> Result<T, CommandError> {
    Err(CommandError::Usage(message.into()))
}

fn refused<T>(message: impl Into<String>) -> Result<T, CommandError> {
    Err(CommandError::Refused(message.into()))
}

/// A subcommand's outcome as `execute` returns it: a refusal is printed as
/// `credential-provider-check <command>: <why>` and exits [`NO`]; a usage error goes to clap's
/// exit 2.
fn finish(command: &str, result: Result<u8, CommandError>) -> Result<u8, String> {
    match result {
        Ok(code) => Ok(code),
        Err(CommandError::Usage(message)) => Err(message),
        Err(CommandError::Refused(message)) => {
            eprintln!("credential-provider-check: {command}: {message}");
            Ok(NO)
        }
    }
}

/// A clap error as the one line every error of this tool is: what is wrong, and any tip.
fn one_line_error(err: &clap::Error) -> String {
    let text = err.to_string();
    let lines: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut joined = String::new();
    for line in lines {
        if !joined.is_empty() {
            // "…not provided:" + "--x", "invalid value …" + "[possible values: …]": one sentence.
            let same_sentence = joined.ends_with(':') || line.starts_with('[');
            joined.push_str(if same_sentence { " " } else { "; " });
        }
        joined.push_str(line);
    }
    let message = joined.strip_prefix("error: ").unwrap_or(&joined);
    format!("{message} (see --help)")
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help, --version, and a bare command (its help, exit 2): clap's own text.
        Err(e)
            if !e.use_stderr()
                || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            // A closed stdout cannot be reported anywhere better than by the exit status.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(USAGE));
        }
        Err(e) => {
            eprintln!("credential-provider-check: {}", one_line_error(&e));
            return ExitCode::from(USAGE);
        }
    };
    match execute(&cli) {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("credential-provider-check: {message}");
            ExitCode::from(USAGE)
        }
    }
}

/// The checker's report is its output: stdout is for the operator here, not a kubelet.
#[allow(clippy::print_stdout)]
fn emit(format: Format, human: impl FnOnce() -> String, json: impl FnOnce() -> serde_json::Value) {
    match format {
        Format::Human => print!("{}", human()),
        Format::Json => println!("{}", json()),
    }
}

/// Loads and validates; when the kubelet would not start, prints the report and returns the exit
/// code. Otherwise returns the config and whether it is valid throughout, our providers' `args`
/// included, having printed the report unless `quiet_when_valid` (then a plugin that refuses its
/// `args` says so itself when it is run, and stdout keeps one JSON document).
fn load_valid(
    format: Format,
    path: &Path,
    bin_dir: Option<&Path>,
    kubelet: &Kubelet,
    quiet_when_valid: bool,
) -> Result<(config::Config, bool), u8> {
    let config = match config::load_for(path, kubelet) {
        Ok(config) => config,
        Err(e) => {
            emit(
                format,
                || report::load_error_human(&e),
                || report::load_error_json(&e),
            );
            return Err(NO);
        }
    };
    let mut v = validate::validate_for(&config, bin_dir, kubelet);
    oidc_file::check(&config, &mut v);
    alibaba_entry::check(&config, &mut v);
    if !quiet_when_valid || !v.ok() {
        emit(
            format,
            || report::validation_human(&config, &v),
            || report::validation_json(&config, &v),
        );
    }
    if v.ok() {
        Ok((config, v.valid()))
    } else {
        Err(NO)
    }
}

fn execute(cli: &Cli) -> Result<u8, String> {
    let format = cli.output;
    match &cli.command {
        Command::Init(args) => {
            if format == Format::Json {
                return Err(
                    "init prints a config, not a report: choose its format with --format json"
                        .to_owned(),
                );
            }
            finish("init", init::run(args))
        }
        Command::Install(args) => {
            if format == Format::Json {
                return Err(
                    "install prints a report for people only: drop --output json".to_owned(),
                );
            }
            finish("install", install::run(args))
        }
        Command::Wait(args) => wait::run(args),
        Command::Doctor(args) => {
            let d = doctor::diagnose(args)?;
            emit(
                format,
                || report::doctor_human(&d),
                || report::doctor_json(&d),
            );
            Ok(if d.healthy() { 0 } else { NO })
        }
        Command::Validate {
            config,
            bin_dir,
            kubelet,
        } => Ok(
            match load_valid(
                format,
                config,
                bin_dir.as_deref(),
                &kubelet.kubelet()?,
                false,
            ) {
                Ok((_, true)) => 0,
                Ok((_, false)) => NO,
                Err(code) => code,
            },
        ),
        Command::Match { config, image } => match_command(format, config, image),
        Command::Run(args) => run_command(format, args),
    }
}

/// `match`: explains patterns even when other parts of the config are invalid.
fn match_command(format: Format, config: &Path, image: &str) -> Result<u8, String> {
    let config = match config::load(config) {
        Ok(c) => c,
        Err(e) => {
            emit(
                format,
                || report::load_error_human(&e),
                || report::load_error_json(&e),
            );
            return Ok(NO);
        }
    };
    let r = explain::match_providers(&config.providers, image)?;
    emit(
        format,
        || report::match_human(&r),
        || report::match_json(&r),
    );
    Ok(if r.matching().is_empty() { NO } else { 0 })
}

/// `run`: every usage error first, then the config as the kubelet would load it, then each
/// matching provider run.
fn run_command(format: Format, args: &RunArgs) -> Result<u8, String> {
    let kubelet = args.kubelet.kubelet()?;
    let sa_token = match &args.sa_token {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| format!("reading --sa-token {}: {e}", path.display()))?
                .trim()
                .to_owned(),
        ),
        None => None,
    };
    let timeout = args
        .timeout
        .to_std()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("--timeout must be positive, got {}", args.timeout))?;
    let normalized_check = explain::normalize(&args.image)?;
    // Plugins that refuse their args still run: their own refusal is shown too.
    let config = match load_valid(format, &args.config, Some(&args.bin_dir), &kubelet, true) {
        Ok((c, _)) => c,
        Err(code) => return Ok(code),
    };
    let r = explain::match_providers(&config.providers, &args.image)?;
    let opts = run::RunOptions {
        bin_dir: args.bin_dir.clone(),
        sa_token,
        sa_annotations: args
            .sa_annotation
            .iter()
            .cloned()
            .collect::<BTreeMap<_, _>>(),
        timeout: timeout.max(Duration::from_millis(1)),
        show_secrets: args.show_secrets,
    };
    let runs: Vec<run::ProviderRun> = config
        .providers
        .iter()
        .filter(|p| r.matching().contains(&p.name.as_str()))
        .map(|p| run::run_provider(p, &normalized_check, &opts))
        .collect();
    let usable = runs.iter().any(run::ProviderRun::usable);
    emit(
        format,
        || report::run_human(&r, &runs, usable),
        || report::run_json(&r, &runs, usable),
    );
    Ok(if usable { 0 } else { NO })
}
