//! Windows nodes: the architecture of a Windows executable (its PE header's machine) and the
//! host's (read from `C:\Windows\System32\cmd.exe` under the host root), which the `.exe` files
//! to install are checked against (`binaries`); `doctor` reads the same (doctor/binaries.rs).
//! Machines are given the ELF numbers [`Machine`] uses, so `--arch` and the messages are the
//! same as on Linux.

use std::fs;
use std::path::Path;

use super::elf::{Arch, ArchSource, Machine};
use super::under;
use crate::{CommandError, refused};

/// The file on a Windows host whose PE header names the host's architecture (the node path).
pub(super) const HOST_PE: &str = r"C:\Windows\System32\cmd.exe";

/// The machine a PE file (`MZ`, then the `PE\0\0` header `e_lfanew` points at) is built for, in
/// ELF numbering; `None` when `head` is not a PE file of a known architecture.
pub(crate) fn pe_machine(head: &[u8]) -> Option<Machine> {
    if head.get(..2)? != b"MZ" {
        return None;
    }
    let at = u32::from_le_bytes(head.get(0x3c..0x40)?.try_into().ok()?) as usize;
    if head.get(at..at.checked_add(4)?)? != b"PE\0\0" {
        return None;
    }
    let machine = u16::from_le_bytes(head.get(at + 4..at + 6)?.try_into().ok()?);
    match machine {
        0x8664 => Some(Machine(62)),
        0xaa64 => Some(Machine(183)),
        0x014c => Some(Machine(3)),
        0x01c4 => Some(Machine(40)),
        _ => None,
    }
}

/// The host's architecture from [`HOST_PE`] under the host root, and that node path.
fn host_machine(root: &Path) -> Option<(Machine, String)> {
    let head = fs::read(under(root, HOST_PE)).ok()?;
    pe_machine(&head).map(|m| (m, HOST_PE.to_owned()))
}

/// The machine a Windows node under `root` installs for: `--arch`'s, which must agree with the
/// host's [`HOST_PE`], else the host's; refused in one line when neither says.
pub(super) fn target_machine(
    root: &Path,
    arch: Option<Arch>,
) -> Result<(Machine, ArchSource), CommandError> {
    match (arch, host_machine(root)) {
        (Some(arch), Some((m, file))) if arch.machine() != m => refused(format!(
            "--arch {} contradicts the host under {}, whose {file} is built for {}; nothing was changed",
            arch.machine().name(),
            root.display(),
            m.name()
        )),
        (Some(arch), _) => Ok((arch.machine(), ArchSource::Option)),
        (None, Some((m, file))) => Ok((m, ArchSource::Host(file))),
        (None, None) => refused(format!(
            "cannot tell the host's architecture: {HOST_PE} under {} is not a Windows executable (is --host-root the node's C:\\ drive?); pass --arch amd64|arm64",
            root.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal PE header: `MZ`, `e_lfanew` = 0x40, `PE\0\0`, the machine.
    fn pe(machine: u16) -> Vec<u8> {
        let mut head = vec![0u8; 0x48];
        head[..2].copy_from_slice(b"MZ");
        head[0x3c..0x40].copy_from_slice(&0x40u32.to_le_bytes());
        head[0x40..0x44].copy_from_slice(b"PE\0\0");
        head[0x44..0x46].copy_from_slice(&machine.to_le_bytes());
        head
    }

    #[test]
    fn pe_machines_in_elf_numbering() {
        assert_eq!(
            pe_machine(&pe(0x8664)).map(Machine::name),
            Some("amd64".into())
        );
        assert_eq!(
            pe_machine(&pe(0xaa64)).map(Machine::name),
            Some("arm64".into())
        );
        assert_eq!(pe_machine(&pe(0x0200)), None, "IA-64: not known");
        let mut truncated = pe(0x8664);
        truncated.truncate(0x45);
        assert_eq!(pe_machine(&truncated), None);
        let mut far = pe(0x8664);
        far[0x3c..0x40].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(pe_machine(&far), None);
        assert_eq!(pe_machine(b"\x7fELF"), None);
        assert_eq!(pe_machine(b""), None);
    }
}
