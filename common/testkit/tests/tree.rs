//! The shape of the tree itself (issue #26): no source file over 800 lines, so each file can do
//! one thing, and docs/development.md naming every workspace crate and every script, so a
//! newcomer's map of the project is never missing a piece.
//!
//! Both checks are functions of a root directory: the tests below run them on this repository
//! and on small trees made for the purpose, which proves each one can fail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // Test code: a panic is a failed assertion.

use std::path::{Path, PathBuf};

use kcp_testkit::TempDir;

/// Most lines a non-test Rust source file may have (an in-file `#[cfg(test)] mod tests` counts;
/// a large one moves to a sibling `tests.rs`).
const MAX_LINES: usize = 800;

/// Where the workspace's own Rust sources live (the fuzz crate is outside the workspace).
const SOURCE_ROOTS: &[&str] = &["common", "providers", "checker", "fuzz/fuzz_targets"];

/// The repository root: this crate is `common/testkit`.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, skipping `tests/` directories, `target/` and files named
/// `tests.rs`.
fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "tests" && name != "target" {
                source_files(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// The files over [`MAX_LINES`] under `root`'s source roots, as `path: N lines`, sorted.
fn long_files(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for dir in SOURCE_ROOTS {
        source_files(&root.join(dir), &mut files);
    }
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let lines = std::fs::read_to_string(path).unwrap().lines().count();
            let shown = path.strip_prefix(root).unwrap_or(path).display();
            (lines > MAX_LINES).then(|| format!("{shown}: {lines} lines"))
        })
        .collect();
    long.sort();
    long
}

/// The workspace's `members` from the root Cargo.toml (a one-line or multi-line array).
fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    // The line that starts `members =` (not a comment that mentions members).
    let start = manifest
        .match_indices("members")
        .map(|(at, _)| at)
        .find(|&at| {
            manifest[..at].ends_with('\n') && manifest[at + 7..].trim_start().starts_with('=')
        })
        .expect("the root Cargo.toml has no workspace members");
    let open = start + manifest[start..].find('[').unwrap();
    let close = open + manifest[open..].find(']').unwrap();
    manifest[open + 1..close]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

/// A crate's package name, from the `name = "..."` of its `[package]` table.
fn package_name(crate_dir: &Path) -> Option<String> {
    let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).ok()?;
    let package = &manifest[manifest.find("[package]")?..];
    package.lines().find_map(|line| {
        let value = line.trim().strip_prefix("name")?.trim().strip_prefix('=')?;
        Some(value.trim().trim_matches('"').to_owned())
    })
}

/// Every file under `scripts/`, as a path relative to it (`test`, `wine/run`), sorted.
fn scripts(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = format!("{prefix}{}", path.file_name().unwrap().to_string_lossy());
            // Python's byte-code cache (.gitignore'd) is written by whoever ran a script.
            if name.ends_with("__pycache__") {
                continue;
            }
            if path.is_dir() {
                walk(&path, &format!("{name}/"), out);
            } else {
                out.push(name);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root.join("scripts"), "", &mut out);
    out.sort();
    out
}

/// Characters that continue a name: `render-deploy`, `fleet_sim_test.py`, `kcp-kubelet`.
fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// Whether `text` holds `word` with no name character right before or after it (a `.` ending a
/// sentence after it still counts).
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let after_ok = match after {
            Some('.') => !text[at + word.len() + 1..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric()),
            Some(c) => !name_char(c),
            None => true,
        };
        !before.is_some_and(|c| name_char(c) || c == '/') && after_ok
    })
}

/// `a/{b,c}d` → `a/bd a/cd`, for every brace group in `text` (one level, as the doc writes them).
fn expand_braces(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|i| open + i) else {
            break;
        };
        let head_start = rest[..open]
            .rfind(|c: char| !(name_char(c) || c == '/'))
            .map_or(0, |i| i + 1);
        let tail_end = rest[close + 1..]
            .find(|c: char| !(name_char(c) || c == '/'))
            .map_or(rest.len(), |i| close + 1 + i);
        let (head, tail) = (&rest[head_start..open], &rest[close + 1..tail_end]);
        out.push_str(&rest[..head_start]);
        let parts: Vec<String> = rest[open + 1..close]
            .split(',')
            .map(|part| format!("{head}{}{tail}", part.trim()))
            .collect();
        out.push_str(&parts.join(" "));
        rest = &rest[tail_end..];
    }
    out.push_str(rest);
    out
}

/// The `scripts/` row of the crate map: its first line and the indented lines that continue it.
fn scripts_row(doc: &str) -> String {
    let mut row = String::new();
    let mut lines = doc.lines().skip_while(|l| !l.starts_with("scripts/"));
    if let Some(first) = lines.next() {
        row.push_str(first);
        for line in lines.take_while(|l| l.starts_with(' ')) {
            row.push('\n');
            row.push_str(line);
        }
    }
    row
}

/// What docs/development.md under `root` leaves out: workspace crates (named by package or by
/// directory) and scripts (by name in the crate map's `scripts/` row, or as `scripts/<path>`
/// anywhere), each as one line.
fn missing_from_development_md(root: &Path) -> Vec<String> {
    let doc = expand_braces(&std::fs::read_to_string(root.join("docs/development.md")).unwrap());
    let row = scripts_row(&doc);
    let mut missing = Vec::new();
    for member in members(root) {
        let package = package_name(&root.join(&member));
        let named = has_word(&doc, &member)
            || has_word(&doc, &format!("{member}/"))
            || package.as_deref().is_some_and(|p| has_word(&doc, p));
        if !named {
            let package = package.unwrap_or_default();
            missing.push(format!("crate {member} ({package})"));
        }
    }
    for script in scripts(root) {
        let named = has_word(&row, &script) || doc.contains(&format!("scripts/{script}"));
        if !named {
            missing.push(format!("scripts/{script}"));
        }
    }
    missing
}

#[test]
fn no_source_file_is_over_800_lines() {
    let long = long_files(&repo());
    assert!(
        long.is_empty(),
        "non-test Rust source files over {MAX_LINES} lines (split them by concern, or move a large \
         test module to a sibling tests.rs):\n  {}",
        long.join("\n  ")
    );
}

#[test]
fn development_md_names_every_crate_and_script() {
    let missing = missing_from_development_md(&repo());
    assert!(
        missing.is_empty(),
        "docs/development.md does not name (add a line for each):\n  {}",
        missing.join("\n  ")
    );
}

/// Writes `lines` lines to `root/relative`, creating directories.
fn write_lines(root: &Path, relative: &str, lines: usize) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "//\n".repeat(lines)).unwrap();
}

#[test]
fn long_files_names_each_long_source_file_and_skips_tests_and_target() {
    let tmp = TempDir::new("tree-long");
    let root = tmp.path();
    write_lines(root, "common/kubelet/src/ok.rs", MAX_LINES);
    write_lines(root, "common/kubelet/src/big.rs", MAX_LINES + 1);
    write_lines(root, "providers/x/src/deep/bigger.rs", 2000);
    write_lines(root, "fuzz/fuzz_targets/target.rs", 900);
    write_lines(root, "common/kubelet/src/big/tests.rs", 5000);
    write_lines(root, "checker/tests/suite.rs", 5000);
    write_lines(root, "checker/target/debug/build/out.rs", 5000);
    write_lines(root, "fuzz/corpus/not_a_target.rs", 5000);
    write_lines(root, "common/notes.md", 5000);
    assert_eq!(
        long_files(root),
        [
            "common/kubelet/src/big.rs: 801 lines",
            "fuzz/fuzz_targets/target.rs: 900 lines",
            "providers/x/src/deep/bigger.rs: 2000 lines",
        ]
    );
}

#[test]
fn missing_names_each_crate_and_script_the_doc_leaves_out() {
    let tmp = TempDir::new("tree-doc");
    let root = tmp.path();
    std::fs::write(
        root.join("Cargo.toml"),
        "# members: one per crate\n[workspace]\nmembers = [\n  \"common/kubelet\",\n  \"providers/ecr\",\n  \"providers/new\",\n]\n",
    )
    .unwrap();
    for (dir, name) in [
        ("common/kubelet", "kcp-kubelet"),
        ("providers/ecr", "ecr-credential-provider"),
        ("providers/new", "new-credential-provider"),
    ] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
        std::fs::write(
            root.join(dir).join("Cargo.toml"),
            format!("[package]\nname = \"{name}\"\n"),
        )
        .unwrap();
    }
    for script in [
        "test",
        "bench-floor.c",
        "fakes/aws_fake.py",
        "fakes/gcp_fake.py",
        "lint",
        "wine/run",
        "wine/shim.c",
    ] {
        write_lines(&root.join("scripts"), script, 1);
    }
    std::fs::create_dir_all(root.join("docs")).unwrap();
    let doc = "# Development\n\n```\ncommon/kubelet/      the contract\n\
               scripts/             test (what CI runs), (+ bench-floor.c), wine/run,\n\
               \x20                    fakes/{aws,gcp}_fake.py\n```\n\n\
               `ecr-credential-provider` is a provider. Run `scripts/wine/shim.c`. A lint.\n";
    std::fs::write(root.join("docs/development.md"), doc).unwrap();
    // "lint" is a word of the doc, but not in the scripts row: still missing.
    assert_eq!(
        missing_from_development_md(root),
        [
            "crate providers/new (new-credential-provider)",
            "scripts/lint"
        ]
    );
}

#[test]
fn words_and_braces() {
    assert!(has_word("run `scripts/test` now", "scripts/test"));
    assert!(has_word("see kcp-kubelet.", "kcp-kubelet"));
    assert!(!has_word("see kcp-kubelet-emu", "kcp-kubelet"));
    assert!(!has_word("the tests", "test"));
    assert!(!has_word("a fleet_sim_test.py", "sim_test.py"));
    assert!(!has_word("wine/run", "run"));
    assert_eq!(
        expand_braces("x fakes/{aws,gcp}_fake.py, {a, b}"),
        "x fakes/aws_fake.py fakes/gcp_fake.py, a b"
    );
}
