//! What a provider binary links stays the wire contract: no crate a provider depends on spawns a
//! process, none of them pulls in this crate (the kubelet's side: config validation, exec), and
//! their fuzz entry points are not built into a release. All are read from the tree itself, so a new provider, a new shared crate or a moved module is
//! checked without this file changing.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// This crate's package name.
const EMULATION: &str = "kcp-kubelet-emulation";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The workspace's path crates: package name → directory (from `[workspace.dependencies]`).
fn workspace_crates() -> BTreeMap<String, PathBuf> {
    let manifest = read(&root().join("Cargo.toml"));
    let mut crates = BTreeMap::new();
    let mut section = "";
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[workspace.dependencies]"
            && let Some((name, spec)) = line.split_once('=')
            && let Some((_, path)) = spec.split_once("path = \"")
        {
            let path = path.split('"').next().unwrap();
            crates.insert(name.trim().to_owned(), root().join(path));
        }
    }
    assert!(crates.contains_key("kcp-kubelet"), "{crates:?}");
    assert!(crates.contains_key(EMULATION), "{crates:?}");
    crates
}

/// The names a manifest lists as linked dependencies: `[dependencies]` and
/// `[target.'…'.dependencies]` (not dev- or build-dependencies), entry or table style.
fn linked_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut linked = false;
    for line in manifest.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']');
            let (table, entry) = match header.split_once("dependencies.") {
                Some((before, name)) => (format!("{before}dependencies"), Some(name)),
                None => (header.to_owned(), None),
            };
            linked = table == "dependencies"
                || (table.starts_with("target.") && table.ends_with(".dependencies"));
            if linked && let Some(name) = entry {
                names.insert(name.to_owned());
            }
        } else if linked
            && !line.starts_with('#')
            && let Some((key, _)) = line.split_once('=')
        {
            let name = key.trim();
            names.insert(name.strip_suffix(".workspace").unwrap_or(name).to_owned());
        }
    }
    names
}

/// The workspace crates `dir`'s package links, directly or through other workspace crates, and
/// their directories.
fn linked_workspace_crates(dir: &Path) -> BTreeMap<String, PathBuf> {
    let crates = workspace_crates();
    let mut found = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for name in linked_dependencies(&read(&dir.join("Cargo.toml"))) {
            if let Some(path) = crates.get(&name)
                && found.insert(name, path.clone()).is_none()
            {
                todo.push(path.clone());
            }
        }
    }
    found
}

/// Every provider crate: the directories under `providers/`.
fn providers() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("providers"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 4, "{dirs:?}");
    dirs
}

/// Every provider crate and every workspace crate a provider links: name → directory.
fn provider_linked_crates() -> BTreeMap<String, PathBuf> {
    let mut linked = BTreeMap::new();
    for provider in providers() {
        linked.extend(linked_workspace_crates(&provider));
        linked.insert(
            provider.file_name().unwrap().to_string_lossy().into_owned(),
            provider,
        );
    }
    linked
}

/// The Rust files under `dir`, in path order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `#[cfg(test)]`, or `#[cfg(all(test, …))]`: what follows is compiled into unit tests only.
fn is_test_only(line: &str) -> bool {
    let line = line.trim();
    line == "#[cfg(test)]" || line.starts_with("#[cfg(all(test,")
}

/// `source` without its test-only items, and the names of the test-only modules it declares
/// by file (`#[cfg(test)] mod tests;`).
fn without_tests(source: &str) -> (String, Vec<String>) {
    let mut kept = String::new();
    let mut test_modules = Vec::new();
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        if !is_test_only(line) {
            kept.push_str(line);
            kept.push('\n');
            continue;
        }
        // The item the attribute applies to: past further attributes, to its `;` or its closing
        // brace (test code balances its braces).
        let mut depth = 0_i64;
        let mut opened = false;
        for item in lines.by_ref() {
            let item = item.trim();
            if item.starts_with("#[") && !opened {
                continue;
            }
            if !opened
                && let Some(name) = item
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub ")
                    .strip_prefix("mod ")
                    .and_then(|rest| rest.strip_suffix(';'))
            {
                test_modules.push(name.trim().to_owned());
            }
            for c in item.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if (opened && depth <= 0) || (!opened && item.ends_with(';')) {
                break;
            }
        }
    }
    (kept, test_modules)
}

/// Ways Rust code starts another process.
fn spawns(line: &str) -> bool {
    line.contains("Command::new")
        || (line.contains("process::") && line.contains("Command"))
        || line.contains("tokio::process")
        || line.contains("posix_spawn")
        || line.contains("libc::fork")
        || line.contains("libc::exec")
        || line.contains("CreateProcess")
}

/// `path:line: text` for every line of `src`'s non-test Rust sources that starts a process.
fn spawning_lines(src: &Path) -> Vec<String> {
    let sources: Vec<(PathBuf, String, Vec<String>)> = rust_files(src)
        .into_iter()
        .map(|path| {
            let (kept, test_modules) = without_tests(&read(&path));
            (path, kept, test_modules)
        })
        .collect();
    // A test module kept in a file of its own: `foo.rs` declares `mod tests;` in `foo/tests.rs`,
    // `lib.rs` or `mod.rs` in `tests.rs` beside it (or `tests/mod.rs`).
    let mut test_files = BTreeSet::new();
    for (path, _, test_modules) in &sources {
        let dir = path.parent().unwrap();
        let own = path.with_extension("");
        for name in test_modules {
            for base in [dir, own.as_path()] {
                test_files.insert(base.join(format!("{name}.rs")));
                test_files.insert(base.join(name).join("mod.rs"));
            }
        }
    }
    let mut found = Vec::new();
    for (path, kept, _) in &sources {
        if test_files.contains(path) {
            continue;
        }
        for (n, line) in kept.lines().enumerate() {
            if spawns(line) {
                let shown = path.strip_prefix(root()).unwrap_or(path);
                found.push(format!("{}:{}: {}", shown.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn no_provider_links_the_kubelet_emulation() {
    for provider in providers() {
        let linked = linked_workspace_crates(&provider);
        // The walk reaches the shared crates, so an absent name means something.
        assert!(
            linked.contains_key("kcp-kubelet") && linked.contains_key("kcp-plugin"),
            "{}: {linked:?}",
            provider.display()
        );
        assert!(
            !linked.contains_key(EMULATION),
            "{} links {EMULATION} (its workspace crates: {:?}): the kubelet's side of the \
             contract (config validation, process spawning) belongs to the checker and tests",
            provider.display(),
            linked.keys().collect::<Vec<_>>()
        );
    }
    // The checker does link it: the walk would see it.
    assert!(linked_workspace_crates(&root().join("checker")).contains_key(EMULATION));
}

#[test]
fn nothing_a_provider_links_spawns_a_process() {
    let linked = provider_linked_crates();
    let found: Vec<String> = linked
        .values()
        .flat_map(|dir| spawning_lines(&dir.join("src")))
        .collect();
    assert!(
        found.is_empty(),
        "code every provider links starts processes (that is the kubelet's side, kept in \
         {EMULATION}):\n{}",
        found.join("\n")
    );
}

/// The fuzz entry points (`pub mod fuzz`) exist only where cargo-fuzz builds (`--cfg fuzzing`) and
/// in unit tests, whose smoke tests call them: a release build of a provider carries none.
#[test]
fn fuzz_entry_points_are_not_built_for_release() {
    let linked = provider_linked_crates();
    let mut modules = 0;
    let mut ungated = Vec::new();
    for dir in linked.values() {
        for path in rust_files(&dir.join("src")) {
            let source = read(&path);
            let lines: Vec<&str> = source.lines().map(str::trim).collect();
            for (n, line) in lines.iter().enumerate() {
                if line.starts_with("pub mod fuzz") {
                    modules += 1;
                    // The attributes right above the module (doc comments may come first).
                    let gated = lines[..n]
                        .iter()
                        .rev()
                        .take_while(|l| l.starts_with("#[") || l.starts_with("///"))
                        .any(|l| *l == "#[cfg(any(fuzzing, test))]");
                    if !gated {
                        let shown = path.strip_prefix(root()).unwrap_or(&path);
                        ungated.push(format!("{}:{}", shown.display(), n + 1));
                    }
                }
            }
        }
    }
    // kcp-plugin's tls and jwt, ACR's and GCR's: the scan sees them.
    assert!(modules >= 4, "only {modules} fuzz modules found");
    assert!(
        ungated.is_empty(),
        "fuzz modules built into release binaries (gate them with #[cfg(any(fuzzing, test))]): {ungated:?}"
    );
}

/// The scan finds what it looks for: this crate's exec does spawn the plugin.
#[test]
fn the_spawn_scan_sees_the_kubelet_side() {
    let found = spawning_lines(&root().join("common/kubelet-emulation/src"));
    assert!(
        found.iter().any(|l| l.contains("exec.rs")),
        "no spawn found in exec.rs: {found:?}"
    );
}

#[test]
fn test_items_are_left_out_of_the_scan() {
    let source = "use std::fs;\n\
                  #[cfg(test)]\n\
                  use std::process::Command;\n\
                  fn real() { let _ = 1; }\n\
                  #[cfg(test)]\n\
                  #[allow(dead_code)]\n\
                  mod tests {\n    fn t() {\n        Command::new(\"sh\");\n    }\n}\n\
                  #[cfg(all(test, target_os = \"linux\"))]\n\
                  mod more;\n\
                  fn after() {}\n";
    let (kept, modules) = without_tests(source);
    assert_eq!(
        kept,
        "use std::fs;\nfn real() { let _ = 1; }\nfn after() {}\n"
    );
    assert_eq!(modules, ["more"]);
    assert!(spawns("use std::process::{Command, Stdio};"));
    assert!(spawns("let child = Command::new(path)"));
    assert!(!spawns("std::process::exit(2)"));
}
