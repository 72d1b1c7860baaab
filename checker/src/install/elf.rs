//! Where a binary may run: the ELF machine of a file, and the host's, read from files on the
//! node's root filesystem (symlinks followed as the node would). `doctor` reads the same.

use std::path::{Component, Path, PathBuf};

/// Files on the host root whose ELF header names the host's architecture, in the order tried.
pub(crate) const HOST_ELF: [&str; 4] = ["bin/sh", "usr/bin/sh", "usr/bin/env", "bin/busybox"];

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

/// The host's architecture, from the first ELF file of [`HOST_ELF`] on the host root, and the
/// node path it was read from; `None` when none is there (an image or extension tree).
fn host_machine(root: &Path) -> Option<(Machine, String)> {
    use std::io::Read as _;
    for node in HOST_ELF {
        let Some(path) = resolve_under(root, Path::new(node)) else {
            continue;
        };
        let mut head = [0u8; 20];
        let ok = std::fs::File::open(&path)
            .and_then(|mut f| f.read_exact(&mut head))
            .is_ok();
        if let Some(m) = elf_machine(&head).filter(|_| ok) {
            return Some((m, format!("/{node}")));
        }
    }
    None
}

/// `install --arch`: the architecture of the tree being installed into, for trees without a
/// `/bin/sh` (extension roots, distroless images).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Arch {
    /// x86-64 (ELF machine 62).
    #[value(alias = "x86_64", alias = "x86-64")]
    Amd64,
    /// AArch64 (ELF machine 183).
    #[value(alias = "aarch64")]
    Arm64,
}

impl Arch {
    pub(crate) fn machine(self) -> Machine {
        match self {
            Arch::Amd64 => Machine(62),
            Arch::Arm64 => Machine(183),
        }
    }
}

/// Where the target's architecture was learnt, for messages and the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ArchSource {
    /// `--arch` (checked against the tree's own ELF file, when it has one).
    Option,
    /// An ELF file of the tree, by its node path (`/bin/sh`).
    Host(String),
    /// The binaries being installed, all built for it (the tree has no ELF file to ask).
    Binaries,
}

/// The architecture the binaries must be built for: `--arch` when given, else the tree's own
/// (its `/bin/sh` or the other files of [`HOST_ELF`]), else the one every binary is built for.
/// A tree whose ELF file contradicts `--arch`, or binaries that disagree in a tree that cannot
/// tell, are refused with one line naming `--arch`. `binaries` are (path, machine) in order.
pub(super) fn target_machine(
    root: &Path,
    arch: Option<Arch>,
    binaries: &[(String, Machine)],
) -> Result<(Machine, ArchSource), crate::CommandError> {
    let host = host_machine(root);
    if let Some(arch) = arch {
        let want = arch.machine();
        if let Some((m, file)) = host.filter(|(m, _)| *m != want) {
            return crate::refused(format!(
                "--arch {} contradicts the tree under {}, whose {file} is built for {}; nothing was changed",
                want.name(),
                root.display(),
                m.name()
            ));
        }
        return Ok((want, ArchSource::Option));
    }
    if let Some((m, file)) = host {
        return Ok((m, ArchSource::Host(file)));
    }
    let tried = format!("/{}", HOST_ELF.join(", /"));
    match binaries.split_first() {
        Some(((_, first), rest)) if rest.iter().all(|(_, m)| m == first) => {
            Ok((*first, ArchSource::Binaries))
        }
        Some(_) => {
            let built: Vec<String> = binaries
                .iter()
                .map(|(path, m)| format!("{path}: {}", m.name()))
                .collect();
            crate::refused(format!(
                "cannot tell the architecture to install for: none of {tried} under {} is an ELF file, and the binaries are built for different ones ({}); pass --arch amd64|arm64; nothing was changed",
                root.display(),
                built.join(", ")
            ))
        }
        None => crate::refused(format!(
            "cannot tell the architecture to install for: none of {tried} under {} is an ELF file; pass --arch amd64|arm64",
            root.display()
        )),
    }
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

    /// A tree with no ELF file: `--arch`, else the binaries when they agree; never a guess.
    #[test]
    fn a_tree_without_an_elf_file_asks_arch_or_the_binaries() {
        let nowhere = Path::new("/nonexistent/kcp-arch-test");
        let amd = ("a".to_owned(), Arch::Amd64.machine());
        let arm = ("b".to_owned(), Arch::Arm64.machine());
        assert_eq!(Arch::Amd64.machine().name(), "amd64");
        assert_eq!(Arch::Arm64.machine().name(), "arm64");
        let got = target_machine(nowhere, Some(Arch::Arm64), std::slice::from_ref(&amd));
        assert!(matches!(got, Ok((m, ArchSource::Option)) if m == Machine(183)));
        let got = target_machine(nowhere, None, &[amd.clone(), amd.clone()]);
        assert!(matches!(got, Ok((m, ArchSource::Binaries)) if m == Machine(62)));
        for binaries in [&[amd, arm][..], &[]] {
            match target_machine(nowhere, None, binaries) {
                Err(crate::CommandError::Refused(m)) => {
                    assert!(m.contains("pass --arch amd64|arm64"), "{m}");
                    assert!(!m.contains('\n'), "{m}");
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
