//! Each provider's binary as the node holds it: whether the kubelet's start-up check takes it,
//! what it is (an ELF or PE executable and its architecture, or a script) and what it is run
//! for, so that even a healthy report says what was checked; and, against the node's own
//! architecture, which binaries fail every exec with "exec format error".

use std::io::Read as _;
use std::path::Path;

use kcp_kubelet_emulation::config::Config;
use kcp_kubelet_emulation::validate;

use crate::diagnosis::{BinaryFormat, BinaryState, Diagnosis, ProviderBinary};
use crate::install::{HOST_ELF, Machine, elf_machine, pe_machine, resolve_under};

/// How much of a binary is read to tell what it is: enough for an ELF header (64 bytes), a PE
/// header (where the DOS header's `e_lfanew` points, within the first few hundred bytes) and a
/// `#!` line (the kernel reads at most 256 bytes of it).
const HEAD_BYTES: u64 = 4096;

/// Every provider of `config` and its binary in `bin` (the bin dir under the host root), named
/// by its path in `bin_dir` (the bin dir as the node sees it), in config order.
pub(super) fn inspect(bin_dir: &str, bin: &Path, config: &Config) -> Vec<ProviderBinary> {
    config
        .providers
        .iter()
        .map(|p| {
            let path = validate::plugin_binary(bin, &p.name);
            let file = path
                .file_name()
                .map_or_else(|| p.name.clone(), |n| n.to_string_lossy().into_owned());
            let state = state_of(&path);
            let format = match state {
                BinaryState::Executable | BinaryState::NotExecutable => format_of(&path),
                _ => None,
            };
            ProviderBinary {
                name: p.name.clone(),
                binary: node_join(bin_dir, &file),
                state,
                format,
                match_images: p.match_images.clone(),
            }
        })
        .collect()
}

/// The file as the kubelet's start-up check (`exec.LookPath`) judges it.
fn state_of(path: &Path) -> BinaryState {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => BinaryState::Missing,
        Err(e) => BinaryState::Unreadable(e.to_string()),
        Ok(meta) if meta.is_dir() => BinaryState::Directory,
        Ok(meta) if !executable(&meta) => BinaryState::NotExecutable,
        Ok(_) => BinaryState::Executable,
    }
}

/// Any execute bit, as Go's `exec.LookPath` asks on Unix.
#[cfg(unix)]
fn executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    meta.permissions().mode() & 0o111 != 0
}

/// Windows has no execute bit: `exec.LookPath` goes by the extension, which
/// `validate::plugin_binary` already chose.
#[cfg(not(unix))]
fn executable(_meta: &std::fs::Metadata) -> bool {
    true
}

/// What the file's first bytes say it is; `None` when it cannot be read.
fn format_of(path: &Path) -> Option<BinaryFormat> {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(HEAD_BYTES).read_to_end(&mut head))
        .ok()?;
    Some(classify(&head))
}

/// An ELF or PE executable and its machine, a `#!` script and its interpreter line, or neither.
fn classify(head: &[u8]) -> BinaryFormat {
    if let Some(m) = elf_machine(head) {
        return BinaryFormat::Elf(m);
    }
    if let Some(m) = pe_machine(head) {
        return BinaryFormat::Pe(m);
    }
    match head.strip_prefix(b"#!") {
        Some(rest) => {
            let line = rest.split(|b| *b == b'\n').next().unwrap_or_default();
            let text: String = String::from_utf8_lossy(line)
                .chars()
                .filter(|c| !c.is_control())
                .collect();
            BinaryFormat::Script(text.trim().to_owned())
        }
        None => BinaryFormat::Unknown,
    }
}

/// `file` in the node directory `dir`, with the node's separator (a Windows path has a drive).
fn node_join(dir: &str, file: &str) -> String {
    match dir.as_bytes() {
        [d, b':', ..] if d.is_ascii_alphabetic() => {
            format!("{}\\{file}", dir.trim_end_matches(['\\', '/']))
        }
        _ => format!("{}/{file}", dir.trim_end_matches('/')),
    }
}

/// The ELF machine of the file at `path`; `None` when it is not ELF or cannot be read.
pub(super) fn machine_of(path: &Path) -> Option<Machine> {
    let mut head = [0u8; 20];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .ok()?;
    elf_machine(&head)
}

/// The node's architecture, from the first ELF file of [`HOST_ELF`] under the root.
fn host_machine(root: &Path) -> Option<Machine> {
    HOST_ELF
        .iter()
        .filter_map(|node| resolve_under(root, Path::new(node)))
        .find_map(|p| machine_of(&p))
}

/// Providers whose binary is an ELF file for another architecture: every exec fails. Reads
/// what [`inspect`] found (`d.providers`), not the files again.
pub(super) fn architectures(root: &Path, bin: &Path, d: &mut Diagnosis) {
    let Some(host) = host_machine(root) else {
        return;
    };
    let foreign: Vec<(String, Machine)> = d
        .providers
        .iter()
        .filter_map(|p| match p.format {
            Some(BinaryFormat::Elf(m)) if m != host => Some((p.name.clone(), m)),
            _ => None,
        })
        .collect();
    for (name, m) in foreign {
        let path = validate::plugin_binary(bin, &name);
        d.problem(
            Some(&name),
            format!(
                "{} is built for {}, but the node is {}: every exec fails with \"exec format error\" and the pull goes anonymous",
                path.display(),
                m.name(),
                host.name()
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binaries_are_told_apart_by_their_first_bytes() {
        let mut elf = b"\x7fELF\x02\x01".to_vec();
        elf.resize(20, 0);
        elf[18] = 183;
        assert_eq!(classify(&elf), BinaryFormat::Elf(Machine(183)));
        let mut pe = vec![0u8; 0x48];
        pe[..2].copy_from_slice(b"MZ");
        pe[0x3c..0x40].copy_from_slice(&0x40u32.to_le_bytes());
        pe[0x40..0x44].copy_from_slice(b"PE\0\0");
        pe[0x44..0x46].copy_from_slice(&0x8664u16.to_le_bytes());
        assert_eq!(classify(&pe), BinaryFormat::Pe(Machine(62)));
        assert_eq!(
            classify(b"#!/usr/bin/env bash\r\nexit 0\n"),
            BinaryFormat::Script("/usr/bin/env bash".to_owned())
        );
        assert_eq!(classify(b""), BinaryFormat::Unknown);
        assert_eq!(classify(b"\x7fELF"), BinaryFormat::Unknown);
    }

    #[test]
    fn binaries_are_named_with_the_nodes_separator() {
        assert_eq!(node_join("/opt/bin/", "ecr"), "/opt/bin/ecr");
        assert_eq!(node_join("C:\\k\\bin\\", "acr.exe"), "C:\\k\\bin\\acr.exe");
    }
}
