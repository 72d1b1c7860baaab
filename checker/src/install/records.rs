//! The two records this project's installers leave on a node and read back to tell their own
//! files from foreign ones: the checksum file in the bin dir and the marker line on a config.

use std::collections::BTreeMap;

/// The checksum file kept in the bin dir: `<sha256>  <name>` per binary this project installed
/// (`sha256sum`'s format; the bash installer of earlier releases kept the same file).
pub const MANIFEST: &str = ".kubelet-credential-providers.sha256";
/// The first words of the marker line on every config this project writes (the bash installer of
/// earlier releases wrote the same); the line ends with `(sha256:<hex of the rest of the file>)`.
pub(super) const MARKER_PREFIX: &str = "# Managed by kubelet-credential-providers ";

/// The first line of a config this project wrote, and the checksum it records of the rest.
pub(super) fn marker_hash(text: &str) -> Option<&str> {
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

/// Who wrote a config file now on the node, by its marker line.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ConfigOwner {
    /// This project, and nobody edited it since.
    Ours,
    /// This project, but the rest of the file no longer has the checksum the marker records.
    Edited,
    /// Someone else: no marker line.
    Foreign,
}

/// Who wrote `have`, a config file's bytes.
pub(super) fn config_owner(have: &[u8]) -> ConfigOwner {
    let text = String::from_utf8_lossy(have);
    match marker_hash(&text) {
        None => ConfigOwner::Foreign,
        Some(hash) => {
            let rest = text.split_once('\n').map_or("", |(_, r)| r);
            if crate::sha256::hex(rest.as_bytes()) == hash {
                ConfigOwner::Ours
            } else {
                ConfigOwner::Edited
            }
        }
    }
}

/// `(name -> sha256)` from the checksum file's text; malformed lines are ignored.
pub(super) fn parse_manifest(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once("  "))
        .filter(|(hash, name)| {
            hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()) && !name.is_empty()
        })
        .map(|(hash, name)| (name.to_owned(), hash.to_owned()))
        .collect()
}

/// The checksum file's text for `recorded`, one line per binary in name order.
pub(super) fn manifest_text(recorded: &BTreeMap<String, String>) -> String {
    recorded
        .iter()
        .map(|(name, hash)| format!("{hash}  {name}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
