//! `install`: puts this project's providers on a node, either from inside a container that has
//! the node's root filesystem mounted (the DaemonSet's hostPath; the image is `FROM scratch`, no
//! shell) or on the node itself (`--host-root /`, which `scripts/install`, a thin wrapper, passes).
//!
//! The config comes from `init` (the one table of defaults, here [`init::generate_explained`]);
//! every action is planned and the config validated against the bin dir as it will be before
//! anything is written, so a refusal leaves the node as it was; a file this project did not write
//! is never replaced without `--force` (binaries: the checksum file; configs: the marker line,
//! both in [`records`]); every write is a temp file beside the target, fsynced, renamed into
//! place, and the directory fsynced, so the kubelet never execs or reads a half-written file, and
//! an interrupt (SIGINT, SIGTERM) waits for the writes to finish; a rerun with nothing to do
//! changes nothing. The replaced version of each file is kept as `<name>.previous` (one rename
//! rolls back), binaries for another architecture than the host's are refused, and what was
//! written is validated with the kubelet's rules and start-up checks. The kubelet is never
//! restarted: the report says how, per platform (docs/install.md).
//
// Each build writes the nodes of its own OS: the Linux build Linux nodes (ELF binaries, from a
// container with the node's root mounted, or on the node), the Windows build Windows nodes
// (`.exe` files, from the HostProcess DaemonSet, which sees the node's own C:\ drive, or on the
// node); the Windows specifics are in [`pe`] and in the writer's platform module.

mod binaries;
mod elf;
mod oidc;
mod pe;
mod records;
mod stage;
mod write;

use std::path::{Path, PathBuf};

use clap::Args;

use self::elf::Arch;
pub(crate) use self::elf::{HOST_ELF, Machine, elf_machine, resolve_under};
pub(crate) use self::pe::pe_machine;
use crate::init::{self, InitArgs};
use crate::{CommandError, usage};

/// The drop-in's default file name.
const DROP_IN_NAME: &str = "50-kubelet-credential-providers.yaml";

/// `credential-provider-check install`: its options. Every option of `init` is accepted too, with
/// the same meaning (`--platform`, `--providers`, `--service-account`, `--drop-in`, ...).
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The node's root filesystem as mounted here, e.g. /host (a hostPath volume).
    #[arg(long, value_name = "DIR")]
    host_root: PathBuf,
    /// The directory holding the provider binaries to install.
    #[arg(long, value_name = "DIR")]
    from: PathBuf,
    /// With --drop-in: the drop-in's file name in the config directory.
    #[arg(long, value_name = "NAME", default_value = DROP_IN_NAME)]
    config_name: String,
    /// Print what would change, and the config; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Refused: install never restarts the kubelet; its report says how to, per platform.
    #[arg(long)]
    restart_kubelet: bool,
    /// Replace same-named binaries this project did not write (the platform's own, such as the
    /// ecr-credential-provider an EKS AMI ships), keeping each as `<name>.previous`.
    #[arg(long)]
    replace_platform_binaries: bool,
    /// Install the binaries only and leave the node's config as the platform wrote it (it already
    /// names them); that config is validated against the new binaries.
    #[arg(long)]
    binaries_only: bool,
    /// Install the binaries only and read, write and check no config at all (the options that
    /// shape the config are not used).
    #[arg(long, conflicts_with = "binaries_only")]
    no_config: bool,
    /// Also replace binaries and configs this project did not write, configs edited by hand since
    /// it wrote them, and symlinks in their place, keeping each as `<name>.previous`.
    #[arg(long)]
    force: bool,
    /// The architecture of the tree under --host-root: amd64 or arm64 (every binary must be
    /// built for it). Default: that of the tree's /bin/sh (or /usr/bin/sh, /usr/bin/env,
    /// /bin/busybox), else of the binaries when they all agree: trees without a shell, such as
    /// extension roots and distroless images, need no option.
    #[arg(long, value_enum, value_name = "ARCH")]
    arch: Option<Arch>,
    /// oidc-credential-provider's registries file to install (e.g. mounted from a ConfigMap):
    /// checked as `validate` checks it, then written where the config's oidc entry names it
    /// (its --config); a file the provider would refuse is refused and the node keeps its own.
    #[arg(long, value_name = "FILE")]
    oidc_registries_from: Option<PathBuf>,
    /// The config's options, as `init` takes them.
    #[command(flatten)]
    init: InitArgs,
}

/// How the kubelet is restarted on each platform, for the report (never run by `install`).
fn restart_hint(platform: &str) -> &'static str {
    match platform {
        "aks-windows" | "eks-windows" => "Restart-Service kubelet on the node (PowerShell)",
        "k3s" => "systemctl restart k3s (servers) or k3s-agent (agents) on the node",
        "rke2" => "systemctl restart rke2-server (servers) or rke2-agent (agents) on the node",
        "kind" => "docker exec <node> systemctl restart kubelet, for each node container",
        _ => "systemctl restart kubelet on the node",
    }
}

/// `install`: plans, checks, writes, validates and reports; returns the exit status.
pub fn run(args: &InstallArgs) -> Result<u8, CommandError> {
    if args.restart_kubelet {
        return usage(format!(
            "--restart-kubelet: install never restarts the kubelet (a DaemonSet would restart every node's kubelet at once); restart it yourself: {}",
            restart_hint(args.init.platform_name())
        ));
    }
    if args.init.windows() && !cfg!(windows) {
        return usage(format!(
            "install writes Linux nodes; for --platform {} see docs/install.md",
            args.init.platform_name()
        ));
    }
    if !args.init.windows() && cfg!(windows) {
        return usage(format!(
            "install on Windows writes Windows nodes (--platform aks-windows or eks-windows), not --platform {}",
            args.init.platform_name()
        ));
    }
    if args.init.windows() {
        for (option, path) in [
            ("--bin-dir", args.init.node_bin_dir()),
            ("--config-path", args.init.node_config_target()),
        ] {
            if windows_drive(&path).is_none_or(|d| !d.eq_ignore_ascii_case(&'C')) {
                return usage(format!(
                    "{option} {path}: install writes the node's C: drive (--host-root), so every path must be on C:"
                ));
            }
        }
    }
    if !args.init.yaml() {
        return usage(
            "install writes YAML: its first line records that this project wrote the file (drop --format json)",
        );
    }
    if args.config_name.contains('/')
        || args.config_name.starts_with('.')
        || !(args.config_name.ends_with(".yaml") || args.config_name.ends_with(".yml"))
    {
        return usage(format!(
            "--config-name must be a file name ending in .yaml or .yml (the kubelet skips other names), got {:?}",
            args.config_name
        ));
    }
    imp::install(args)
}

/// The drive letter of a Windows node path (`C:\...` or `C:/...`).
fn windows_drive(path: &str) -> Option<char> {
    match path.as_bytes() {
        [d, b':', b'\\' | b'/', ..] if d.is_ascii_alphabetic() => Some(char::from(*d)),
        _ => None,
    }
}

/// The node path `path` (absolute) as a path under the host root: a Linux path below `/`, a
/// Windows one (`C:\var\lib\...`) below its drive's root, so `--host-root C:\` is the node's
/// own C: drive.
fn under(root: &Path, path: &str) -> PathBuf {
    if windows_drive(path).is_some() {
        return path[3..]
            .split(['\\', '/'])
            .filter(|c| !c.is_empty())
            .fold(root.to_path_buf(), |p, c| p.join(c));
    }
    root.join(path.trim_start_matches('/'))
}

/// The node path of `name` in the node directory `dir`, with the node's separator.
fn node_join(dir: &str, name: &str) -> String {
    if windows_drive(dir).is_some() {
        format!("{}\\{name}", dir.trim_end_matches(['\\', '/']))
    } else {
        format!("{}/{name}", dir.trim_end_matches('/'))
    }
}

/// The node path of `real`, a path under the host root (for the report).
fn node_of(root: &Path, real: &Path, windows: bool) -> String {
    let rel = real.strip_prefix(root).unwrap_or(real);
    if windows {
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        format!("C:\\{}", parts.join("\\"))
    } else {
        Path::new("/").join(rel).display().to_string()
    }
}

mod imp {
    use std::collections::BTreeMap;
    use std::fs;
    use std::io::Write as _;
    use std::path::{Path, PathBuf};

    use super::elf::{ArchSource, Machine};
    use super::records::{ConfigOwner, MANIFEST, MARKER_PREFIX, config_owner};
    use super::records::{manifest_text, parse_manifest};
    use super::stage::{Staging, kubelet_refusal, validate_staged};
    use super::write::{HoldSignals, PREVIOUS, Planned, Verb, apply, atomic_write, leftovers};
    use super::{CommandError, InstallArgs, init, node_join, node_of, restart_hint, under, usage};
    use crate::{refused, sha256};

    /// Why the config now at `node_config` may not be replaced (`Ok`: it may).
    fn config_may_be_replaced(
        args: &InstallArgs,
        node_config: &str,
        have: &[u8],
    ) -> Result<(), String> {
        match config_owner(have) {
            ConfigOwner::Ours => Ok(()),
            ConfigOwner::Edited => Err(format!(
                "{node_config} was edited by hand since this project wrote it; move your edits to another file, then remove it"
            )),
            ConfigOwner::Foreign if args.init.drop_in() => Err(format!(
                "{node_config} exists and was not written by this project; choose another --config-name"
            )),
            ConfigOwner::Foreign => Err(format!(
                "{node_config} exists and was not written by this project; use --drop-in (kubelet >= 1.34) or another --config-path"
            )),
        }
    }

    /// The whole run: see the module's documentation.
    #[allow(clippy::print_stdout)]
    pub fn install(args: &InstallArgs) -> Result<u8, CommandError> {
        check_options(args)?;
        let generated = if args.no_config {
            None
        } else {
            Some(init::generate_explained(&args.init).map_err(|e| match e {
                CommandError::Refused(m) => CommandError::Refused(format!("init: {m}")),
                usage => usage,
            })?)
        };
        let plan = Plan::new(args, generated)?;
        plan.validate()?;
        let stale = plan.stale();
        let manifest_changed = plan.new_manifest != plan.old_manifest;
        let changes = plan
            .planned
            .iter()
            .chain(&plan.config_step)
            .chain(&plan.registries_step)
            .filter(|p| p.verb != Verb::Unchanged)
            .count()
            + usize::from(manifest_changed)
            + stale.len();
        let config_changed = plan
            .config_step
            .as_ref()
            .is_some_and(|p| p.verb != Verb::Unchanged && p.verb != Verb::Chmod);
        let mut out = plan.header();
        plan.write(&stale, manifest_changed, &mut out)?;
        if let (Some(p), false) = (&plan.registries_step, args.dry_run) {
            if let Err(e) = super::oidc::check_written(p) {
                print!("{out}");
                return Err(e);
            }
            out.push_str(&format!(
                "validated: {} (as oidc-credential-provider reads it)\n",
                p.node
            ));
        }

        report(
            args,
            &mut out,
            &Outcome {
                changes,
                config_changed,
                config_step: plan.config_step.as_ref(),
                node_config: &plan.node_config,
                target: &plan.target,
                bin_dir: &plan.bin_dir,
                real_bin_dir: &plan.real_bin_dir,
                explain: plan.generated.as_ref().map_or(&[][..], |g| &g.stderr[..]),
            },
        )?;
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(out.as_bytes())
            .and_then(|()| stdout.flush())
            .or_else(|e| refused(format!("writing the report: {e}")))?;
        Ok(0)
    }

    /// The options that cannot go together, or do not fit an install, as usage errors.
    fn check_options(args: &InstallArgs) -> Result<(), CommandError> {
        let root = &args.host_root;
        if !root.is_dir() {
            return usage(format!("--host-root {} is not a directory", root.display()));
        }
        if args.binaries_only && args.init.drop_in() {
            return usage("--binaries-only leaves the config alone: it cannot go with --drop-in");
        }
        if args.no_config && args.init.drop_in() {
            return usage("--no-config writes no config: it cannot go with --drop-in");
        }
        if (args.binaries_only || args.no_config) && args.init.shared_identity().is_some() {
            return usage(
                "--token-cache-shared-identity goes into the config, which --binaries-only and --no-config leave alone: give the kubelet CREDENTIAL_PROVIDER_TOKEN_CACHE_SHARED_IDENTITY in its environment instead (docs/install.md, Fleet mode)",
            );
        }
        if args.init.registries_skeleton() {
            return usage(
                "--registries-skeleton prints a file to edit, not one to install: run it with init",
            );
        }
        if args.oidc_registries_from.is_some() {
            if args.binaries_only || args.no_config {
                return usage(
                    "--oidc-registries-from writes the file the installed config names: it cannot go with --binaries-only or --no-config",
                );
            }
            if !args.init.has_provider(init::ProviderKind::Oidc) {
                return usage(
                    "--oidc-registries-from is oidc-credential-provider's registries file: add oidc to --providers",
                );
            }
        }
        Ok(())
    }

    /// Every write of the run, planned before any is made, so that a refusal changes nothing.
    struct Plan<'a> {
        args: &'a InstallArgs,
        /// init's config and its `--explain` lines; `None` with `--no-config`.
        generated: Option<init::Generated>,
        /// The config as written: the marker line, then init's config.
        config_file: Option<String>,
        /// False with `--binaries-only`, which keeps the node's config.
        writes_config: bool,
        /// The binaries to install (file name, content).
        sources: Vec<(&'a str, Vec<u8>)>,
        /// Where the architecture the binaries are built for was learnt, and it.
        arch_source: ArchSource,
        arch: Machine,
        /// The bin dir as the node sees it, and under the host root.
        bin_dir: String,
        real_bin_dir: PathBuf,
        /// The checksum file, its text now and its text after the run.
        manifest_path: PathBuf,
        old_manifest: String,
        new_manifest: String,
        /// One step per binary.
        planned: Vec<Planned>,
        /// `--config-path` (a directory with `--drop-in`) and the config file in it.
        target: String,
        node_config: String,
        config_step: Option<Planned>,
        /// oidc's registries file (install/oidc.rs).
        registries_step: Option<Planned>,
    }

    impl<'a> Plan<'a> {
        /// Plans every write; refused (nothing written) when one of them may not be made.
        fn new(
            args: &'a InstallArgs,
            generated: Option<init::Generated>,
        ) -> Result<Self, CommandError> {
            let root = &args.host_root;
            let config_file = generated.as_ref().map(|g| {
                format!(
                    "{MARKER_PREFIX}credential-provider-check install (sha256:{}); rerun it to change this file.\n{}",
                    sha256::hex(g.text.as_bytes()),
                    g.text
                )
            });
            let writes_config = config_file.is_some() && !args.binaries_only;
            // The binaries, and the architecture they must be built for.
            let (sources, arch_source, arch) = super::binaries::sources(args, root)?;
            let bin_dir = args.init.node_bin_dir();
            let real_bin_dir = under(root, &bin_dir);
            let manifest_path = real_bin_dir.join(MANIFEST);
            let target = args.init.node_config_target();
            let node_config = if args.init.drop_in() {
                node_join(&target, &args.config_name)
            } else {
                target.clone()
            };
            let mut plan = Plan {
                args,
                generated,
                config_file,
                writes_config,
                sources,
                arch_source,
                arch,
                bin_dir,
                real_bin_dir,
                manifest_path,
                old_manifest: String::new(),
                new_manifest: String::new(),
                planned: Vec::new(),
                target,
                node_config,
                config_step: None,
                registries_step: None,
            };
            let mut refusals = plan.plan_binaries();
            plan.plan_config(&mut refusals)?;
            if let Some((last, others)) = refusals.split_last() {
                for r in others {
                    eprintln!("credential-provider-check: install: {r}");
                }
                return refused(format!("{last} (nothing was changed)"));
            }
            Ok(plan)
        }

        /// One step per binary, and the checksum file's text before and after; the refusals.
        fn plan_binaries(&mut self) -> Vec<String> {
            let args = self.args;
            let mut recorded = match fs::read_to_string(&self.manifest_path) {
                Ok(text) => parse_manifest(&text),
                Err(_) => BTreeMap::new(),
            };
            self.old_manifest = manifest_text(&recorded);
            let mut refusals = Vec::new();
            for (name, content) in &self.sources {
                let node = node_join(&self.bin_dir, name);
                let known = recorded.get(*name).cloned();
                let result = super::write::plan(
                    node.clone(),
                    self.real_bin_dir.join(name),
                    content.clone(),
                    0o755,
                    args.force,
                    |have| {
                        if args.replace_platform_binaries
                            || known.as_deref() == Some(sha256::hex(have).as_str())
                        {
                            Ok(())
                        } else {
                            Err(format!(
                                "{node} exists and was not installed by this project (its checksum is not in {MANIFEST}); remove it, choose another --bin-dir, or take it over with --replace-platform-binaries"
                            ))
                        }
                    },
                );
                match result {
                    Ok(p) => self.planned.push(p),
                    Err(why) => refusals.push(why),
                }
                recorded.insert((*name).to_owned(), sha256::hex(content));
            }
            self.new_manifest = manifest_text(&recorded);
            refusals
        }

        /// The config's step and oidc's registries file's; refusals go into `refusals`.
        fn plan_config(&mut self, refusals: &mut Vec<String>) -> Result<(), CommandError> {
            let args = self.args;
            let root = &args.host_root;
            let real_config = under(root, &self.node_config);
            if args.binaries_only && !real_config.is_file() {
                // The platform's config stays; it must exist, or the kubelet runs no plugin at all.
                refusals.push(format!(
                    "--binaries-only: {} does not exist, so nothing would run these binaries; drop --binaries-only to write a config",
                    self.node_config
                ));
            }
            if let (Some(file), true) = (&self.config_file, self.writes_config) {
                let node_config = &self.node_config;
                match super::write::plan(
                    node_config.clone(),
                    real_config.clone(),
                    file.clone().into_bytes(),
                    0o644,
                    args.force,
                    |have| config_may_be_replaced(args, node_config, have),
                ) {
                    Ok(p) => self.config_step = Some(p),
                    Err(why) => refusals.push(why),
                }
            }
            // oidc's registries file, from the mounted ConfigMap (install/oidc.rs).
            if let (Some(source), Some(g)) = (&args.oidc_registries_from, &self.generated) {
                let windows = args.init.windows();
                match super::oidc::plan_registries(source, &g.text, root, args.force, windows)? {
                    Ok(p) => self.registries_step = Some(p),
                    Err(why) => refusals.push(why),
                }
            }
            Ok(())
        }

        /// Validates the config before it is written: alone, or merged with the directory's
        /// other files exactly as the kubelet would read them, against the bin dir as it will be.
        fn validate(&self) -> Result<(), CommandError> {
            let (Some(file), true) = (&self.config_file, self.writes_config) else {
                return Ok(());
            };
            let binaries: Vec<&str> = self.sources.iter().map(|(name, _)| *name).collect();
            let staging = Staging {
                root: &self.args.host_root,
                target: &self.target,
                drop_in: self
                    .args
                    .init
                    .drop_in()
                    .then_some(self.args.config_name.as_str()),
                bin_dir: &self.bin_dir,
                binaries: &binaries,
            };
            validate_staged(&staging, file)
        }

        /// Temporary files a killed run left beside what is about to be written.
        fn stale(&self) -> Vec<PathBuf> {
            let mut stale: Vec<PathBuf> = self
                .planned
                .iter()
                .flat_map(|p| leftovers(&p.real))
                .collect();
            stale.extend(leftovers(&self.manifest_path));
            if let Some(p) = &self.config_step {
                stale.extend(leftovers(&p.real));
            }
            if let Some(p) = &self.registries_step {
                stale.extend(leftovers(&p.real));
            }
            stale
        }

        /// The report's first lines: the host root, and the architecture unless the tree's own
        /// ELF file told it.
        fn header(&self) -> String {
            let mut out = format!("host root: {}\n", self.args.host_root.display());
            match self.arch_source {
                ArchSource::Host(_) => {}
                ArchSource::Option => {
                    out.push_str(&format!("architecture: {} (--arch)\n", self.arch.name()))
                }
                ArchSource::Binaries => out.push_str(&format!(
                    "architecture: {} (the binaries'; the tree has no /bin/sh to tell)\n",
                    self.arch.name()
                )),
            }
            out
        }

        /// Makes the writes (or says what they would be), interrupts held until they are done:
        /// leftovers removed, binaries, their checksums right after them (a later run must know
        /// them as ours), oidc's registries file, then the config that names them.
        fn write(
            &self,
            stale: &[PathBuf],
            manifest_changed: bool,
            out: &mut String,
        ) -> Result<(), CommandError> {
            let args = self.args;
            let would = if args.dry_run { "would " } else { "" };
            let held = HoldSignals::new();
            for path in stale {
                let node = node_of(&args.host_root, path, args.init.windows());
                out.push_str(&format!(
                    "{would}remove a temporary file an interrupted run left: {node}\n"
                ));
                if !args.dry_run {
                    fs::remove_file(path).or_else(|e| refused(format!("removing {node}: {e}")))?;
                }
            }
            for p in &self.planned {
                apply(p, args.dry_run, out)?;
            }
            if manifest_changed {
                let node = node_join(&self.bin_dir, MANIFEST);
                out.push_str(&format!("{would}record checksums: {node}\n"));
                if !args.dry_run {
                    atomic_write(&self.manifest_path, self.new_manifest.as_bytes(), 0o644)?;
                }
            }
            if let Some(p) = &self.registries_step {
                apply(p, args.dry_run, out)?;
            }
            if let Some(p) = &self.config_step {
                apply(p, args.dry_run, out)?;
            }
            drop(held);
            Ok(())
        }
    }

    /// What the run did, for the report.
    struct Outcome<'a> {
        changes: usize,
        config_changed: bool,
        config_step: Option<&'a Planned>,
        node_config: &'a str,
        target: &'a str,
        bin_dir: &'a str,
        real_bin_dir: &'a Path,
        /// `init --explain`'s lines: its warnings and the explanation.
        explain: &'a [String],
    }

    /// The report's tail after the steps: the final check, the count, init's explanation and
    /// the restart hint (warnings on stderr).
    #[allow(clippy::print_stdout)]
    fn report(args: &InstallArgs, out: &mut String, o: &Outcome) -> Result<(), CommandError> {
        let (target, bin_dir) = (o.target, o.bin_dir);
        if args.dry_run {
            if let (true, Some(p)) = (o.config_changed, o.config_step) {
                out.push_str(&format!(
                    "--- {} ---\n{}---\n",
                    o.node_config,
                    String::from_utf8_lossy(&p.content)
                ));
            }
            out.push_str(&format!(
                "dry run: {} change(s) planned, nothing was touched\n",
                o.changes
            ));
        } else {
            if !args.no_config {
                let real_target = under(&args.host_root, target);
                if let Some(why) = kubelet_refusal(&real_target, Some(o.real_bin_dir)) {
                    print!("{out}");
                    return refused(format!(
                        "{target} with --bin-dir {bin_dir} as written: the kubelet would not start: {why}; roll back by renaming each {PREVIOUS} file over its file"
                    ));
                }
                out.push_str(&format!("validated: {target} with --bin-dir {bin_dir}\n"));
            }
            if o.changes == 0 {
                out.push_str("nothing to do: everything is up to date\n");
            } else {
                out.push_str(&format!("{} change(s) made\n", o.changes));
            }
        }
        if args.no_config {
            out.push_str(&format!(
                "Kubelet flags:\n  --image-credential-provider-bin-dir={bin_dir}\nno config was written (--no-config): the kubelet's config must name these binaries\n"
            ));
        }
        for line in o.explain.iter().filter(|l| !l.starts_with("warning: ")) {
            out.push_str(line);
            out.push('\n');
        }
        if o.config_changed {
            out.push_str(&format!(
                "{} the kubelet to load the new config: {}\n",
                if args.dry_run {
                    "then restart"
                } else {
                    "restart"
                },
                restart_hint(args.init.platform_name())
            ));
        }
        for line in o.explain.iter().filter(|l| l.starts_with("warning: ")) {
            eprintln!("credential-provider-check: install: {line}");
        }
        Ok(())
    }
}
