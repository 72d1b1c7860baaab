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
/// node path it was read from.
pub(super) fn host_machine(root: &Path) -> Result<(Machine, String), crate::CommandError> {
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
            return Ok((m, format!("/{node}")));
        }
    }
    crate::refused(format!(
        "cannot tell the host's architecture: none of /{} under {} is an ELF file (is --host-root the node's root filesystem?)",
        HOST_ELF.join(", /"),
        root.display()
    ))
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
}
