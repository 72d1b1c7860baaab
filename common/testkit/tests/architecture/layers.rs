//! The crates' own layering: which of our crates each one may link (its `[dependencies]`, not its
//! dev-dependencies), as docs/development.md "Layering" states it. A new link between our crates
//! is a decision: make it here and in that section together.

use std::collections::BTreeSet;
use std::path::Path;

/// Each workspace member and the crates of ours it may link; `None`: any (the test kit).
pub const ALLOWED: &[(&str, Option<&[&str]>)] = &[
    ("common/kubelet", Some(&[])),
    ("common/provider-args", Some(&[])),
    ("common/oidc-registries", Some(&["kcp-kubelet"])),
    (
        "common/kubelet-emulation",
        Some(&["kcp-kubelet", "kcp-provider-args"]),
    ),
    ("common/plugin", Some(&["kcp-kubelet", "kcp-provider-args"])),
    ("common/testkit", None),
    (
        "checker",
        Some(&[
            "kcp-kubelet",
            "kcp-kubelet-emulation",
            "kcp-oidc-registries",
            "kcp-plugin",
            "kcp-provider-args",
        ]),
    ),
    (
        "controller",
        Some(&[
            "kcp-kubelet",
            "kcp-kubelet-emulation",
            "kcp-plugin",
            "kcp-provider-args",
        ]),
    ),
    ("providers/ecr", Some(PROVIDER)),
    ("providers/acr", Some(PROVIDER)),
    ("providers/gcr", Some(PROVIDER)),
    ("providers/static", Some(PROVIDER)),
    ("providers/alibaba", Some(PROVIDER)),
    (
        "providers/oidc",
        Some(&[
            "kcp-kubelet",
            "kcp-oidc-registries",
            "kcp-plugin",
            "kcp-provider-args",
        ]),
    ),
];

/// What a provider binary may link: the contract, its command line and the runtime.
const PROVIDER: &[&str] = &["kcp-kubelet", "kcp-plugin", "kcp-provider-args"];

/// The `kcp-*` crates in `manifest`'s `[dependencies]` table (target-specific tables too).
pub fn our_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_dependencies = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]"
                || (line.starts_with("[target.") && line.ends_with(".dependencies]"));
            continue;
        }
        if in_dependencies && line.starts_with("kcp-") {
            let name: String = line
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            out.insert(name);
        }
    }
    out
}

/// Every link between our crates the table does not allow, and every member it does not list.
pub fn layering_breaks(root: &Path) -> Vec<String> {
    let mut breaks = Vec::new();
    for member in super::sources::members(root) {
        let Some((_, allowed)) = ALLOWED.iter().find(|(m, _)| *m == member) else {
            breaks.push(format!("{member}: not in the layering table"));
            continue;
        };
        let Some(allowed) = allowed else {
            continue;
        };
        let manifest = std::fs::read_to_string(root.join(&member).join("Cargo.toml")).unwrap();
        for dependency in our_dependencies(&manifest) {
            if !allowed.contains(&dependency.as_str()) {
                breaks.push(format!("{member} links {dependency}"));
            }
        }
    }
    breaks
}
