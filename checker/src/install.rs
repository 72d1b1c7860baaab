//! `install`: puts this project's providers on a node from inside a container that has the node's
//! root filesystem mounted (a DaemonSet's hostPath), with no shell: the image is `FROM scratch`.
//!
//! The guarantees are `scripts/install`'s: the config comes from `init` (the one table of
//! defaults, here [`init::generate_explained`]); every action is planned before anything is
//! written, so a refusal leaves the node as it was; a file this project did not write is never
//! replaced (binaries: the checksum file `scripts/install` keeps; configs: its marker line); every
//! write is a temp file beside the target, fsynced, renamed into place, and the directory fsynced,
//! so the kubelet never execs or reads a half-written file; a rerun with nothing to do changes
//! nothing. On top of that: the replaced version of each file is kept as `<name>.previous` (one
//! rename rolls back), binaries for another architecture than the host's are refused, and what was
//! written is validated with the kubelet's rules and start-up checks. The kubelet is never
//! restarted: the report says how, per platform (docs/install.md).
// Windows builds keep the options (one CLI everywhere) and refuse at run time.
#![cfg_attr(not(unix), allow(dead_code, unused_imports))]

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

use clap::Args;
use kcp_kubelet_emulation::{config, validate};

use crate::init::{self, InitArgs};
use crate::sha256;
use crate::{CommandError, refused, usage};

/// The checksum file `scripts/install` keeps in the bin dir: `<sha256>  <name>` per binary it
/// installed. Shared, so either tool can upgrade what the other wrote.
pub const MANIFEST: &str = ".kubelet-credential-providers.sha256";
/// The first words of the marker line on every config this project writes (`scripts/install`'s
/// too); the line ends with `(sha256:<hex of the rest of the file>)`.
const MARKER_PREFIX: &str = "# Managed by kubelet-credential-providers ";
/// The drop-in's default file name (as `scripts/install`'s).
const DROP_IN_NAME: &str = "50-kubelet-credential-providers.yaml";
/// The suffix of the kept previous version of a replaced file.
const PREVIOUS: &str = ".previous";
/// Files on the host root whose ELF header names the host's architecture, in the order tried.
pub(crate) const HOST_ELF: [&str; 4] = ["bin/sh", "usr/bin/sh", "usr/bin/env", "bin/busybox"];

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
    /// The config's options, as `init` takes them.
    #[command(flatten)]
    init: InitArgs,
}

/// How the kubelet is restarted on each platform, for the report (never run by `install`).
fn restart_hint(platform: &str) -> &'static str {
    match platform {
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
    if args.init.windows() {
        return usage(format!(
            "install writes Linux nodes; for --platform {} see docs/install.md",
            args.init.platform_name()
        ));
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

/// One line of the report per planned action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Install,
    Update,
    Chmod,
    Unchanged,
}

/// The architecture an ELF file is built for: its `e_machine`, and a name for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Machine(pub(crate) u16);

impl Machine {
    pub(crate) fn name(self) -> String {
        match self.0 {
            3 => "386".to_owned(),
            40 => "arm".to_owned(),
            62 => "amd64".to_owned(),
            183 => "arm64".to_owned(),
            243 => "riscv64".to_owned(),
            21 => "ppc64".to_owned(),
            22 => "s390x".to_owned(),
            other => format!("ELF machine {other}"),
        }
    }
}

/// The ELF `e_machine` of a file's header; `None` when the file is not ELF.
pub(crate) fn elf_machine(head: &[u8]) -> Option<Machine> {
    if head.len() < 20 || &head[..4] != b"\x7fELF" {
        return None;
    }
    let bytes = [head[18], head[19]];
    match head[5] {
        1 => Some(Machine(u16::from_le_bytes(bytes))),
        2 => Some(Machine(u16::from_be_bytes(bytes))),
        _ => None,
    }
}

/// `node_path` (absolute, as the node sees it) under `root`, following symlinks as the node
/// would: an absolute link target is the node's, so it is resolved under `root` again, never in
/// this container's own filesystem.
pub(crate) fn resolve_under(root: &Path, node_path: &Path) -> Option<PathBuf> {
    let mut pending: Vec<std::ffi::OsString> = node_path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_owned()),
            _ => None,
        })
        .rev()
        .collect();
    let mut resolved: Vec<std::ffi::OsString> = Vec::new();
    let mut hops = 0;
    while let Some(part) = pending.pop() {
        if part == ".." {
            resolved.pop();
            continue;
        }
        if part == "." {
            continue;
        }
        let candidate: PathBuf = std::iter::once(root.as_os_str().to_owned())
            .chain(resolved.iter().cloned())
            .chain(std::iter::once(part.clone()))
            .collect();
        match std::fs::read_link(&candidate) {
            Ok(target) => {
                hops += 1;
                if hops > 40 {
                    return None;
                }
                if target.is_absolute() {
                    resolved.clear();
                }
                for c in target.components().rev() {
                    match c {
                        Component::Normal(n) => pending.push(n.to_owned()),
                        Component::ParentDir => pending.push("..".into()),
                        _ => {}
                    }
                }
            }
            Err(_) => resolved.push(part),
        }
    }
    Some(
        std::iter::once(root.as_os_str().to_owned())
            .chain(resolved)
            .collect(),
    )
}

/// The node path `path` (absolute) as a path under the host root.
fn under(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

/// The first line of a config this project wrote, and the checksum it records of the rest.
fn marker_hash(text: &str) -> Option<&str> {
    let (first, _) = text.split_once('\n')?;
    let rest = first.strip_prefix(MARKER_PREFIX)?;
    let start = rest.find("(sha256:")? + "(sha256:".len();
    let hash = rest.get(start..start + 64)?;
    let ok = hash
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        && rest.get(start + 64..start + 65) == Some(")");
    ok.then_some(hash)
}

/// `(name -> sha256)` from the checksum file's text; malformed lines are ignored, as
/// `scripts/install` ignores them.
fn parse_manifest(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once("  "))
        .filter(|(hash, name)| {
            hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()) && !name.is_empty()
        })
        .map(|(hash, name)| (name.to_owned(), hash.to_owned()))
        .collect()
}

fn manifest_text(recorded: &BTreeMap<String, String>) -> String {
    recorded
        .iter()
        .map(|(name, hash)| format!("{hash}  {name}\n"))
        .collect()
}

#[cfg(not(unix))]
mod imp {
    use super::{CommandError, InstallArgs};

    /// Windows: the installer writes Linux nodes only.
    pub fn install(_args: &InstallArgs) -> Result<u8, CommandError> {
        super::usage("install writes Linux nodes and runs on Linux only")
    }
}

#[cfg(unix)]
mod imp {
    use std::collections::BTreeMap;
    use std::fs::{self, File, OpenOptions};
    use std::io::{Read as _, Write as _};
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
    use std::path::{Path, PathBuf};

    use super::{
        CommandError, HOST_ELF, InstallArgs, MANIFEST, MARKER_PREFIX, Machine, PREVIOUS, Verb,
        config, elf_machine, init, manifest_text, marker_hash, parse_manifest, refused,
        resolve_under, restart_hint, sha256, under, usage, validate,
    };

    /// One file to put in place.
    struct Planned {
        /// The path on the node, for the report.
        node: String,
        /// The path under the host root.
        real: PathBuf,
        verb: Verb,
        content: Vec<u8>,
        mode: u32,
    }

    fn read(path: &Path) -> Result<Vec<u8>, CommandError> {
        fs::read(path).or_else(|e| refused(format!("reading {}: {e}", path.display())))
    }

    fn mode_of(meta: &fs::Metadata) -> u32 {
        meta.permissions().mode() & 0o7777
    }

    /// The host's architecture, from the first ELF file of [`HOST_ELF`] on the host root.
    fn host_machine(root: &Path) -> Result<(Machine, String), CommandError> {
        for node in HOST_ELF {
            let Some(path) = resolve_under(root, Path::new(node)) else {
                continue;
            };
            let mut head = [0u8; 20];
            let ok = File::open(&path)
                .and_then(|mut f| f.read_exact(&mut head))
                .is_ok();
            if let Some(m) = elf_machine(&head).filter(|_| ok) {
                return Ok((m, format!("/{node}")));
            }
        }
        refused(format!(
            "cannot tell the host's architecture: none of /{} under {} is an ELF file (is --host-root the node's root filesystem?)",
            HOST_ELF.join(", /"),
            root.display()
        ))
    }

    /// Plans one file: what to do, or why not. `ours` tells whether the file now there was
    /// written by this project.
    fn plan(
        node: String,
        real: PathBuf,
        content: Vec<u8>,
        mode: u32,
        ours: impl FnOnce(&[u8]) -> Result<(), String>,
    ) -> Result<Planned, String> {
        let verb = match fs::symlink_metadata(&real) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Verb::Install,
            Err(e) => return Err(format!("{node}: {e}")),
            Ok(meta) if meta.is_dir() => return Err(format!("{node} is a directory")),
            Ok(meta) if !meta.is_file() => {
                return Err(format!(
                    "{node} is not a regular file (a symlink?); install replaces only files it wrote"
                ));
            }
            Ok(meta) => {
                let have = fs::read(&real).map_err(|e| format!("reading {node}: {e}"))?;
                if have == content {
                    if mode_of(&meta) == mode {
                        Verb::Unchanged
                    } else {
                        Verb::Chmod
                    }
                } else {
                    ours(&have)?;
                    Verb::Update
                }
            }
        };
        Ok(Planned {
            node,
            real,
            verb,
            content,
            mode,
        })
    }

    /// Writes `content` to `path` with `mode` so that no reader ever sees a partial file: a temp
    /// file in the same directory, fsynced, renamed over `path`, then the directory fsynced.
    fn atomic_write(path: &Path, content: &[u8], mode: u32) -> Result<(), CommandError> {
        let dir = path.parent().unwrap_or(Path::new("/"));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        let write = || -> std::io::Result<()> {
            let _ = fs::remove_file(&tmp);
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            file.write_all(content)?;
            // The umask must not decide the mode the kubelet sees.
            file.set_permissions(fs::Permissions::from_mode(mode))?;
            file.sync_all()?;
            fs::rename(&tmp, path)?;
            File::open(dir)?.sync_all()
        };
        write().or_else(|e| {
            let _ = fs::remove_file(&tmp);
            refused(format!("writing {}: {e}", path.display()))
        })
    }

    /// Creates `dir` and its missing parents with mode 0755.
    fn make_dirs(dir: &Path) -> Result<(), CommandError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .or_else(|e| refused(format!("creating {}: {e}", dir.display())))
    }

    /// Validates `config` (a file or a directory) as the kubelet would, with its start-up checks
    /// on `bin_dir` when given; the kubelet's message when it would refuse.
    fn kubelet_refusal(config_path: &Path, bin_dir: Option<&Path>) -> Option<String> {
        match config::load(config_path) {
            Err(e) => Some(e.to_string()),
            Ok(loaded) => {
                let v = validate::validate(&loaded, bin_dir);
                if v.ok() {
                    None
                } else {
                    Some(
                        v.errors
                            .iter()
                            .chain(&v.registration)
                            .map(|f| match &f.provider {
                                Some(p) => format!("{p}: {}", f.message),
                                None => f.message.clone(),
                            })
                            .collect::<Vec<_>>()
                            .join("; "),
                    )
                }
            }
        }
    }

    /// A scratch directory for the pre-write validation, removed when dropped.
    struct Stage(PathBuf);

    impl Drop for Stage {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// Carries out one planned step (or, in a dry run, only says what it would do).
    fn apply(p: &Planned, dry_run: bool, out: &mut String) -> Result<(), CommandError> {
        let would = if dry_run { "would " } else { "" };
        match p.verb {
            Verb::Unchanged => out.push_str(&format!("unchanged: {}\n", p.node)),
            Verb::Chmod => {
                out.push_str(&format!("{would}fix mode {:04o}: {}\n", p.mode, p.node));
                if !dry_run {
                    fs::set_permissions(&p.real, fs::Permissions::from_mode(p.mode))
                        .or_else(|e| refused(format!("chmod {}: {e}", p.node)))?;
                }
            }
            Verb::Install => {
                out.push_str(&format!("{would}install: {}\n", p.node));
                if !dry_run {
                    if let Some(dir) = p.real.parent() {
                        make_dirs(dir)?;
                    }
                    atomic_write(&p.real, &p.content, p.mode)?;
                }
            }
            Verb::Update => {
                out.push_str(&format!(
                    "{would}update: {} (previous version kept as {}{PREVIOUS})\n",
                    p.node, p.node
                ));
                if !dry_run {
                    // The old version first: whatever happens next, it can be renamed back.
                    let old = read(&p.real)?;
                    let mut real_previous = p.real.clone().into_os_string();
                    real_previous.push(PREVIOUS);
                    atomic_write(Path::new(&real_previous), &old, p.mode)?;
                    atomic_write(&p.real, &p.content, p.mode)?;
                }
            }
        }
        Ok(())
    }

    /// The config as `install` would write it, checked with the kubelet's rules in a scratch
    /// directory (in drop-in mode merged with the directory's other files) before anything is
    /// written.
    fn validate_staged(
        args: &InstallArgs,
        root: &Path,
        target: &str,
        config_file: &str,
    ) -> Result<(), CommandError> {
        let stage = Stage(std::env::temp_dir().join(format!(
            "kcp-install-{}-{}",
            std::process::id(),
            sha256::hex(root.as_os_str().as_encoded_bytes())
        )));
        let _ = fs::remove_dir_all(&stage.0);
        make_dirs(&stage.0)?;
        let staged = if args.init.drop_in() {
            let real_dir = under(root, target);
            if let Ok(entries) = fs::read_dir(&real_dir) {
                for entry in entries.flatten() {
                    let name = entry.file_name();
                    let name = name.to_string_lossy();
                    let kubelet_reads = [".json", ".yaml", ".yml"]
                        .iter()
                        .any(|ext| name.ends_with(ext));
                    if kubelet_reads && *name != *args.config_name {
                        let _ = fs::copy(entry.path(), stage.0.join(&*name));
                    }
                }
            }
            fs::write(stage.0.join(&args.config_name), config_file)
                .or_else(|e| refused(format!("staging the config: {e}")))?;
            stage.0.clone()
        } else {
            let file = stage.0.join("config.yaml");
            fs::write(&file, config_file)
                .or_else(|e| refused(format!("staging the config: {e}")))?;
            file
        };
        if let Some(why) = kubelet_refusal(&staged, None) {
            return refused(format!(
                "the kubelet would refuse {target} with this config: {why} (nothing was changed)"
            ));
        }
        drop(stage);
        Ok(())
    }

    /// The whole run: see the module's documentation.
    #[allow(clippy::print_stdout)]
    pub fn install(args: &InstallArgs) -> Result<u8, CommandError> {
        let root = &args.host_root;
        if !root.is_dir() {
            return usage(format!("--host-root {} is not a directory", root.display()));
        }
        if args.binaries_only && args.init.drop_in() {
            return usage("--binaries-only leaves the config alone: it cannot go with --drop-in");
        }
        let generated = init::generate_explained(&args.init).map_err(|e| match e {
            CommandError::Refused(m) => CommandError::Refused(format!("init: {m}")),
            usage => usage,
        })?;
        let body = generated.text;
        let config_file = format!(
            "{MARKER_PREFIX}credential-provider-check install (sha256:{}); rerun it to change this file.\n{body}",
            sha256::hex(body.as_bytes())
        );

        // The binaries, and the host's architecture.
        let (host, host_file) = host_machine(root)?;
        let bin_dir = args.init.node_bin_dir();
        let real_bin_dir = under(root, &bin_dir);
        let mut sources = Vec::new();
        for name in args.init.binaries() {
            let src = args.from.join(name);
            let content = read(&src)?;
            match elf_machine(&content) {
                None => {
                    return refused(format!("{} is not a Linux (ELF) executable", src.display()));
                }
                Some(m) if m != host => {
                    return refused(format!(
                        "{} is built for {}, but the host is {} (by {host_file}): use the image for the node's architecture; nothing was changed",
                        src.display(),
                        m.name(),
                        host.name()
                    ));
                }
                Some(_) => sources.push((name, content)),
            }
        }

        // The plan, before anything is written.
        let manifest_path = real_bin_dir.join(MANIFEST);
        let mut recorded = match fs::read_to_string(&manifest_path) {
            Ok(text) => parse_manifest(&text),
            Err(_) => BTreeMap::new(),
        };
        let old_manifest = manifest_text(&recorded);
        let mut refusals = Vec::new();
        let mut planned = Vec::new();
        for (name, content) in sources {
            let node = format!("{}/{name}", bin_dir.trim_end_matches('/'));
            let want_hash = sha256::hex(&content);
            let known = recorded.get(name).cloned();
            let result = plan(
                node.clone(),
                real_bin_dir.join(name),
                content,
                0o755,
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
                Ok(p) => planned.push(p),
                Err(why) => refusals.push(why),
            }
            recorded.insert(name.to_owned(), want_hash);
        }
        let new_manifest = manifest_text(&recorded);

        let target = args.init.node_config_target();
        let node_config = if args.init.drop_in() {
            format!("{}/{}", target.trim_end_matches('/'), args.config_name)
        } else {
            target.clone()
        };
        let real_config = under(root, &node_config);
        let config_plan = if args.binaries_only {
            // The platform's config stays; it must exist, or the kubelet runs no plugin at all.
            if !real_config.is_file() {
                refusals.push(format!(
                    "--binaries-only: {node_config} does not exist, so nothing would run these binaries; drop --binaries-only to write a config"
                ));
            }
            None
        } else {
            Some(plan(
                node_config.clone(),
                real_config.clone(),
                config_file.clone().into_bytes(),
                0o644,
                |have| {
                    let text = String::from_utf8_lossy(have);
                    match marker_hash(&text) {
                        Some(hash) => {
                            let rest = text.split_once('\n').map_or("", |(_, r)| r);
                            if sha256::hex(rest.as_bytes()) == hash {
                                Ok(())
                            } else {
                                Err(format!(
                                    "{node_config} was edited by hand since this project wrote it; move your edits to another file, then remove it"
                                ))
                            }
                        }
                        None => Err(if args.init.drop_in() {
                            format!(
                                "{node_config} exists and was not written by this project; choose another --config-name"
                            )
                        } else {
                            format!(
                                "{node_config} exists and was not written by this project; use --drop-in (kubelet >= 1.34) or another --config-path"
                            )
                        }),
                    }
                },
            ))
        };
        match config_plan {
            Some(Ok(p)) => planned.push(p),
            Some(Err(why)) => refusals.push(why),
            None => {}
        }
        if let Some((last, others)) = refusals.split_last() {
            for r in others {
                eprintln!("credential-provider-check: install: {r}");
            }
            return refused(format!("{last} (nothing was changed)"));
        }

        // Validate the config before it is written: alone, or merged with the directory's other
        // files exactly as the kubelet would read them.
        if !args.binaries_only {
            validate_staged(args, root, &target, &config_file)?;
        }

        let changes = planned.iter().filter(|p| p.verb != Verb::Unchanged).count()
            + usize::from(new_manifest != old_manifest);
        let config_changed = !args.binaries_only
            && planned
                .last()
                .is_some_and(|p| p.verb != Verb::Unchanged && p.verb != Verb::Chmod);
        let mut out = String::new();
        let would = if args.dry_run { "would " } else { "" };
        out.push_str(&format!("host root: {}\n", root.display()));

        let (config_step, binary_steps) = if args.binaries_only {
            (None, &planned[..])
        } else {
            let (config, binaries) = planned
                .split_last()
                .ok_or_else(|| CommandError::Refused("nothing planned (a bug)".to_owned()))?;
            (Some(config), binaries)
        };
        for p in binary_steps {
            apply(p, args.dry_run, &mut out)?;
        }
        // The checksums right after the binaries: a later run must know them as ours.
        if new_manifest != old_manifest {
            let node = format!("{}/{MANIFEST}", bin_dir.trim_end_matches('/'));
            out.push_str(&format!("{would}record checksums: {node}\n"));
            if !args.dry_run {
                atomic_write(&manifest_path, new_manifest.as_bytes(), 0o644)?;
            }
        }
        if let Some(config_step) = config_step {
            apply(config_step, args.dry_run, &mut out)?;
        }

        if args.dry_run {
            if config_changed {
                out.push_str(&format!("--- {node_config} ---\n{config_file}---\n"));
            }
            out.push_str(&format!(
                "dry run: {changes} change(s) planned, nothing was touched\n"
            ));
        } else {
            let real_target = under(root, &target);
            if let Some(why) = kubelet_refusal(&real_target, Some(&real_bin_dir)) {
                print!("{out}");
                return refused(format!(
                    "{target} with --bin-dir {bin_dir} as written: the kubelet would not start: {why}; roll back by renaming each {PREVIOUS} file over its file"
                ));
            }
            out.push_str(&format!("validated: {target} with --bin-dir {bin_dir}\n"));
            if changes == 0 {
                out.push_str("nothing to do: everything is up to date\n");
            } else {
                out.push_str(&format!("{changes} change(s) made\n"));
            }
        }
        for line in generated
            .stderr
            .iter()
            .filter(|l| !l.starts_with("warning: "))
        {
            out.push_str(line);
            out.push('\n');
        }
        if config_changed {
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
        for line in generated
            .stderr
            .iter()
            .filter(|l| l.starts_with("warning: "))
        {
            eprintln!("credential-provider-check: install: {line}");
        }
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(out.as_bytes())
            .and_then(|()| stdout.flush())
            .or_else(|e| refused(format!("writing the report: {e}")))?;
        Ok(0)
    }
}

/// `wait`: the DaemonSet's main container once `install` (its init container) is done. The image
/// has no shell and no `sleep`; as PID 1 a process ignores SIGTERM unless it handles it, so the
/// handler exits at once instead of waiting out the pod's grace period.
#[cfg(unix)]
pub fn wait_for_termination() -> Result<u8, String> {
    extern "C" fn leave(_: libc::c_int) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(0) }
    }
    let handler = leave as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: installs a handler that only calls an async-signal-safe function.
        if unsafe { libc::signal(signal, handler) } == libc::SIG_ERR {
            return Err("wait: cannot handle SIGTERM".to_owned());
        }
    }
    // Say so once the handlers are in place: a caller that waits for this line never races them.
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "waiting for SIGTERM");
    let _ = stdout.flush();
    drop(stdout);
    loop {
        // SAFETY: pause has no preconditions; it returns only after a handled signal.
        unsafe { libc::pause() };
    }
}

/// `wait` on Windows: not used there (the DaemonSets are Linux only).
#[cfg(not(unix))]
pub fn wait_for_termination() -> Result<u8, String> {
    Err("wait runs in the Linux DaemonSet only".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_elf_machine_in_either_byte_order() {
        let mut head = b"\x7fELF\x02\x01".to_vec();
        head.resize(20, 0);
        head[18] = 183;
        assert_eq!(elf_machine(&head), Some(Machine(183)));
        head[5] = 2;
        head[18] = 0;
        head[19] = 62;
        assert_eq!(
            elf_machine(&head).map(Machine::name).as_deref(),
            Some("amd64")
        );
        assert_eq!(elf_machine(b"#!/bin/sh\n"), None);
    }

    #[test]
    fn markers_of_both_installers_are_ours() {
        let hash = "a".repeat(64);
        for tool in ["scripts/install", "credential-provider-check install"] {
            let text = format!("{MARKER_PREFIX}{tool} (sha256:{hash}); rerun it.\nbody\n");
            assert_eq!(marker_hash(&text), Some(hash.as_str()));
        }
        assert_eq!(marker_hash("# Managed by someone else (sha256:x)\n"), None);
    }

    #[test]
    fn manifest_round_trips() {
        let hash = "b".repeat(64);
        let text = format!("{hash}  ecr-credential-provider\nnot a line\n");
        let parsed = parse_manifest(&text);
        assert_eq!(
            manifest_text(&parsed),
            format!("{hash}  ecr-credential-provider\n")
        );
    }
}
