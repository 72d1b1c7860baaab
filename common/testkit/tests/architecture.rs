//! The house's structure (issue #36): no import circle between sibling modules, and no
//! production function over 100 lines. Both checks read the workspace's sources with `syn`;
//! the tests below run them on this repository and on small crates made for the purpose,
//! which proves each one can fail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // Test code: a panic is a failed assertion.

mod architecture {
    pub mod docs;
    pub mod functions;
    pub mod imports;
    pub mod layers;
    pub mod names;
    pub mod sources;
}

use std::path::{Path, PathBuf};

use architecture::docs::{restates, restating_docs};
use architecture::functions::{MAX_FUNCTION_LINES, long_functions, tri_state_functions};
use architecture::imports::circles;
use architecture::layers::{layering_breaks, our_dependencies};
use architecture::names::confusing_names;
use architecture::sources::crates;
use kcp_testkit::TempDir;

/// The repository root: this crate is `common/testkit`.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn no_import_circle_between_sibling_modules() {
    let found = circles(&crates(&repo()));
    assert!(
        found.is_empty(),
        "modules that name each other (move what both need into a lower module, or down into the \
         one that names it):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn no_production_function_is_over_100_lines() {
    let long = long_functions(&crates(&repo()));
    assert!(
        long.is_empty(),
        "production functions over {MAX_FUNCTION_LINES} lines (split each into named steps):\n  {}",
        long.join("\n  ")
    );
}

#[test]
fn no_doc_comment_only_restates_its_name() {
    let found = restating_docs(&crates(&repo()));
    assert!(
        found.is_empty(),
        "doc comments that only restate the name (say why it exists or what it holds, or drop \
         them):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn restating_is_the_name_in_other_words_only() {
    for (doc, name) in [
        ("The directory.", "dir"),
        ("The message.", "message"),
        ("Its path.", "path"),
        ("The status code.", "status"),
        ("`matchImages`.", "match_images"),
        ("The HTTP method.", "http_method"),
        ("Client ID.", "client_id"),
        ("The role.", "role_arn"),
        ("The host as configured.", "host"),
        ("Static keys.", "StaticKey"),
    ] {
        assert!(restates(doc, name), "{doc:?} on {name}");
    }
    for (doc, name) in [
        ("Where the cache files live, created 0700.", "dir"),
        ("The HTTP status.", "status"),
        ("Unix seconds.", "expires"),
        ("The region, e.g. `us-west-2`.", "region"),
        ("The metadata server.", "metadata"),
        (
            "`cacheType` (validated later, case-sensitive).",
            "cache_type",
        ),
        ("", "dir"),
    ] {
        assert!(!restates(doc, name), "{doc:?} on {name}");
    }
}

#[test]
fn no_production_function_returns_option_bool() {
    let found = tri_state_functions(&crates(&repo()));
    assert!(
        found.is_empty(),
        "functions answering Option<bool> (give the three cases an enum with a name each):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn type_names_are_neither_std_traits_nor_repeated_in_a_crate() {
    let found = confusing_names(&crates(&repo()));
    assert!(
        found.is_empty(),
        "type names that mislead (rename them after what they hold):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn each_crate_links_only_the_crates_of_ours_its_layer_allows() {
    let breaks = layering_breaks(&repo());
    assert!(
        breaks.is_empty(),
        "links between our crates outside docs/development.md \"Layering\" (change the code, or \
         the table in tests/architecture/layers.rs and that section together):\n  {}",
        breaks.join("\n  ")
    );
}

#[test]
fn our_dependencies_reads_only_the_dependencies_tables() {
    let manifest = "[package]\nname = \"x\"\n\n[dependencies]\nkcp-kubelet.workspace = true\n\
                    kcp-plugin = { workspace = true }\nserde = \"1\"\n\n\
                    [target.'cfg(unix)'.dependencies]\nkcp-provider-args.workspace = true\n\n\
                    [dev-dependencies]\nkcp-testkit.workspace = true\n";
    assert_eq!(
        our_dependencies(manifest).into_iter().collect::<Vec<_>>(),
        ["kcp-kubelet", "kcp-plugin", "kcp-provider-args"]
    );
}

/// Every `.rs` file under `dir` but test files (`tests.rs`, `tests/`).
fn non_test_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && name != "tests" {
            non_test_sources(&path, out);
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// What in `text` is ours: a flag of one of our binaries (`--registry-mirror`) or one of our
/// environment variables (`CREDENTIAL_PROVIDER_…`).
fn ours_in(text: &str) -> Vec<String> {
    let mut names: Vec<String> = kcp_provider_args::flags::PROVIDERS
        .iter()
        .flat_map(|p| p.known())
        .filter_map(|flag| flag.long)
        .filter(|long| long != "help" && long != "version")
        // As written on a command line, and as a flag table spells it (only names of several
        // words: `"registry"` is also a JSON field of the kubelet's).
        .flat_map(|long| {
            let quoted = long.contains('-').then(|| format!("\"{long}\""));
            std::iter::once(format!("--{long}")).chain(quoted)
        })
        .collect();
    names.push("CREDENTIAL_PROVIDER_".to_owned());
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|name| {
            text.match_indices(name.as_str()).any(|(at, _)| {
                // `--region` must not match inside `--regional`.
                !text[at + name.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
                    || name.ends_with('_')
            })
        })
        .collect()
}

#[test]
fn the_contract_crate_names_no_flag_or_variable_of_ours() {
    let mut files = Vec::new();
    non_test_sources(&repo().join("common/kubelet/src"), &mut files);
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for name in ours_in(&text) {
            found.push(format!("{}: {name}", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "kcp-kubelet is the kubelet's contract only; these belong in kcp-provider-args or \
         kcp-plugin:\n  {}",
        found.join("\n  ")
    );
    assert_eq!(
        ours_in(
            "a --registry-mirror=x, --regional, CREDENTIAL_PROVIDER_X, Flag::long(\"assume-role\")"
        ),
        [
            "\"assume-role\"",
            "--registry-mirror",
            "CREDENTIAL_PROVIDER_"
        ]
    );
}

/// Writes `text` to `root/relative`, creating directories.
fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A workspace with one crate, `member`.
fn workspace(root: &Path, member: &str) {
    write(
        root,
        "Cargo.toml",
        &format!("[workspace]\nmembers = [\"{member}\", \"common/testkit\"]\n"),
    );
}

#[test]
fn circles_are_found_through_uses_paths_and_reexports() {
    let tmp = TempDir::new("arch-circles");
    let root = tmp.path();
    workspace(root, "x");
    write(
        root,
        "x/src/lib.rs",
        "mod a;\nmod b;\nmod c;\nmod d;\nmod e;\npub use e::Thing;\n#[cfg(test)]\nmod tests;\n",
    );
    // a ↔ b through `use` lines; c → d through a code path, d → c through a re-export.
    write(root, "x/src/a.rs", "use crate::b::B;\npub struct A;\n");
    write(root, "x/src/b.rs", "use super::{a::A, c};\npub struct B;\n");
    write(root, "x/src/c.rs", "pub fn c() { crate::d::d(); }\n");
    write(
        root,
        "x/src/d.rs",
        "pub fn d() {}\npub fn t(_: crate::Thing) {}\n",
    );
    // e → c only from test code, and its child names its parent: neither is an edge.
    write(
        root,
        "x/src/e.rs",
        "mod inner;\npub struct Thing;\n#[cfg(test)]\nmod tests { use crate::c; }\n\
         impl Thing { #[cfg(any(test, fuzzing))] fn f() { crate::c::c(); } }\n",
    );
    write(root, "x/src/e/inner.rs", "use super::Thing;\n");
    // The test kit is never production, whatever it names.
    write(root, "common/testkit/src/lib.rs", "mod p;\nmod q;\n");
    write(
        root,
        "common/testkit/src/p.rs",
        "use crate::q::Q;\npub struct P;\n",
    );
    write(
        root,
        "common/testkit/src/q.rs",
        "use crate::p::P;\npub struct Q;\n",
    );
    assert_eq!(
        circles(&crates(root)),
        ["x (lib): under crate: a → b (x/src/a.rs:1), b → a (x/src/b.rs:1)"]
    );

    // Nested siblings are found under their parent; `e → c` from d's re-export closes d ↔ e? No:
    // e names nothing, so c → d → e stays a chain. Now make e name d.
    write(
        root,
        "x/src/e.rs",
        "mod inner;\npub struct Thing;\npub fn e() { crate::d::d(); }\n",
    );
    write(
        root,
        "x/src/e/inner.rs",
        "mod deep;\nmod low;\npub use low::L;\n",
    );
    write(root, "x/src/e/inner/deep.rs", "pub fn f(_: super::L) {}\n");
    write(
        root,
        "x/src/e/inner/low.rs",
        "pub struct L;\npub fn g() { super::deep::f(L) }\n",
    );
    assert_eq!(
        circles(&crates(root)),
        [
            "x (lib): under crate: a → b (x/src/a.rs:1), b → a (x/src/b.rs:1)",
            "x (lib): under crate: d → e (x/src/d.rs:2), e → d (x/src/e.rs:3)",
            "x (lib): under crate::e::inner: deep → low (x/src/e/inner/deep.rs:1), low → deep (x/src/e/inner/low.rs:2)",
        ]
    );
}

#[test]
fn confusing_names_finds_std_trait_names_and_repeats_across_modules() {
    let tmp = TempDir::new("arch-names");
    let root = tmp.path();
    workspace(root, "z");
    write(
        root,
        "z/src/lib.rs",
        "mod a;\nmod b;\npub struct Sync;\n#[cfg(unix)]\npub struct Twin;\n#[cfg(windows)]\npub struct Twin;\n\
         #[cfg(test)]\nstruct Clone;\n",
    );
    write(
        root,
        "z/src/a.rs",
        "pub struct Target;\npub enum Error {}\n",
    );
    write(
        root,
        "z/src/b.rs",
        "pub enum Target {}\n#[cfg(test)]\nmod tests { struct Error; }\n",
    );
    assert_eq!(
        confusing_names(&crates(root)),
        [
            "z (lib): Target in z/src/a.rs, z/src/b.rs",
            "z/src/lib.rs: Sync is a standard trait's name",
        ]
    );
}

#[test]
fn long_functions_counts_fn_to_closing_brace_in_production_code_only() {
    let tmp = TempDir::new("arch-long");
    let root = tmp.path();
    workspace(root, "y");
    let body = |name: &str, lines: usize| {
        // `fn` line + (lines - 2) body lines + closing brace = `lines` lines.
        format!(
            "fn {name}() {{\n{}}}\n",
            "    let _ = 1;\n".repeat(lines - 2)
        )
    };
    let doc = "/// A doc comment does not count.\n".repeat(20);
    write(
        root,
        "y/src/main.rs",
        &format!(
            "mod m;\n{doc}{}{}#[cfg(test)]\n{}",
            body("fits", MAX_FUNCTION_LINES),
            body("over", MAX_FUNCTION_LINES + 1),
            body("test_only", 500)
        ),
    );
    write(
        root,
        "y/src/m.rs",
        &format!(
            "struct S;\nimpl S {{\n{}}}\ntrait T {{\n{}}}\n#[cfg(test)]\nmod tests {{\n{}}}\n",
            body("method", 150),
            body("provided", 101),
            body("in_tests", 300)
        ),
    );
    write(root, "common/testkit/src/lib.rs", &body("kit", 400));
    write(
        root,
        "y/src/m/tri.rs",
        "pub fn maybe() -> Option<bool> { None }\npub fn sure() -> Option<u8> { None }\n\
         fn full() -> std::option::Option<bool> { None }\n",
    );
    let main = std::fs::read_to_string(root.join("y/src/m.rs")).unwrap();
    std::fs::write(root.join("y/src/m.rs"), format!("mod tri;\n{main}")).unwrap();
    assert_eq!(
        tri_state_functions(&crates(root)),
        ["y/src/m/tri.rs: full", "y/src/m/tri.rs: maybe"]
    );
    assert_eq!(
        long_functions(&crates(root)),
        [
            "y/src/m.rs: method 150 lines",
            "y/src/m.rs: provided 101 lines",
            "y/src/main.rs: over 101 lines",
        ]
    );
}
