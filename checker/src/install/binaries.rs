//! The binaries `install` writes: read from `--from`, each checked to be an executable of the
//! node's OS (ELF for a Linux node, PE for a Windows one) built for the architecture it installs
//! for, which [`elf::target_machine`] or [`pe::target_machine`] decides. Anything else is refused
//! in one line before a file is written.

use std::fs;
use std::path::Path;

use super::InstallArgs;
use super::elf::{self, ArchSource, Machine};
use super::pe;
use crate::{CommandError, refused};

/// The binaries to install (file name, content), where their architecture was learnt, and it.
pub(super) type Sources<'a> = (Vec<(&'a str, Vec<u8>)>, ArchSource, Machine);

/// What differs between the two kinds of node.
struct NodeOs {
    /// The machine an executable of this OS is built for, when it is one.
    machine_of: fn(&[u8]) -> Option<Machine>,
    /// What the files are, for the refusal of one that is not.
    executable: &'static str,
    /// Where the binaries come from, for the refusal of a missing one.
    unpacked: &'static str,
    /// What to use instead when a binary is built for another architecture than the host's.
    instead: &'static str,
}

const LINUX: NodeOs = NodeOs {
    machine_of: elf::elf_machine,
    executable: "a Linux (ELF) executable",
    unpacked: "the directory of the unpacked release, or cargo build --release's target/release",
    instead: "the image",
};

const WINDOWS: NodeOs = NodeOs {
    machine_of: pe::pe_machine,
    executable: "a Windows (PE) executable",
    unpacked: "the directory of the unpacked windows-amd64 release zips",
    instead: "the release",
};

/// The binaries in `--from` for the node under `root` (its OS is the platform's), each built for
/// the architecture `install` writes for, and where that came from.
pub(super) fn sources<'a>(args: &'a InstallArgs, root: &Path) -> Result<Sources<'a>, CommandError> {
    let os = if args.init.windows() {
        &WINDOWS
    } else {
        &LINUX
    };
    let mut read = Vec::new();
    for name in args.init.binaries() {
        let src = args.from.join(name);
        let content = match fs::read(&src) {
            Ok(content) => content,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return refused(format!(
                    "{name} not found in {} ({}); nothing was changed",
                    args.from.display(),
                    os.unpacked
                ));
            }
            Err(e) => return refused(format!("reading {}: {e}", src.display())),
        };
        let Some(m) = (os.machine_of)(&content) else {
            return refused(format!(
                "{} is not {}; nothing was changed",
                src.display(),
                os.executable
            ));
        };
        read.push((name, content, m));
    }
    let built: Vec<(String, Machine)> = read
        .iter()
        .map(|(name, _, m)| (args.from.join(name).display().to_string(), *m))
        .collect();
    let (want, source) = if args.init.windows() {
        pe::target_machine(root, args.arch)?
    } else {
        elf::target_machine(root, args.arch, &built)?
    };
    if let Some((path, m)) = built.iter().find(|(_, m)| *m != want) {
        return refused(match &source {
            ArchSource::Host(file) => format!(
                "{path} is built for {}, but the host is {} (by {file}): use {} for the node's architecture; nothing was changed",
                m.name(),
                want.name(),
                os.instead
            ),
            _ => format!(
                "{path} is built for {}, but --arch is {}: unpack the release archives of that architecture into --from (or give --arch {}); nothing was changed",
                m.name(),
                want.name(),
                m.name()
            ),
        });
    }
    let sources = read
        .into_iter()
        .map(|(name, content, _)| (name, content))
        .collect();
    Ok((sources, source, want))
}
