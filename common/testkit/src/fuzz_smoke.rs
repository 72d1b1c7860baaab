//! The stable-Rust runner for the cargo-fuzz targets in `fuzz/`: every seed in
//! `fuzz/corpus/<target>/` plus a few thousand mutations of them from a fixed seed, so CI checks
//! each target's invariants even without a nightly toolchain. Each crate holding target bodies has
//! a `fuzz_smoke` test module (`src/fuzz_smoke.rs`, a unit test where the bodies exist only under
//! `cfg(any(fuzzing, test))`; this crate's own is `tests/fuzz_smoke.rs`) that calls [`run`] once
//! per target and [`assert_wired`] once.
//!
//! A failure prints the input as a Rust byte string, ready to be saved as a new seed file.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

/// A fuzz target body: arbitrary bytes in, a panic when an invariant breaks.
pub type Body = fn(&[u8]);

/// Mutated inputs per target on top of the seeds.
pub const MUTATIONS: usize = 4000;

/// One target as a smoke test sees it.
#[derive(Clone, Copy)]
pub struct Target {
    /// `fuzz/fuzz_targets/<name>.rs`, `fuzz/corpus/<name>/` and the `[[bin]]` name.
    pub name: &'static str,
    /// What `fuzz/fuzz_targets/<name>.rs` calls, e.g. `kcp_plugin::jwt::fuzz::claims`.
    pub call: &'static str,
    /// The body itself.
    pub body: Body,
}

/// The workspace's `fuzz/` directory.
pub fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The seed corpus of `target`, in file-name order; at least five seeds.
///
/// # Panics
/// When the directory is missing or holds fewer than five files.
pub fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = fuzz_dir().join("corpus").join(target);
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("seed corpus {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    let seeds: Vec<Vec<u8>> = entries
        .iter()
        .map(|path| std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .collect();
    assert!(
        seeds.len() >= 5,
        "{}: only {} seeds",
        dir.display(),
        seeds.len()
    );
    seeds
}

/// One input made from the seeds: random bytes now and then, else a seed with a few edits
/// (byte flips, dictionary words spliced in, cuts, repeats, crossovers with another seed).
fn mutate(rng: &mut fastrand::Rng, seeds: &[Vec<u8>], dictionary: &[&[u8]]) -> Vec<u8> {
    if rng.u8(..) < 16 {
        return (0..rng.usize(..64)).map(|_| rng.u8(..)).collect();
    }
    let mut data = seeds[rng.usize(..seeds.len())].clone();
    for _ in 0..rng.usize(1..=4) {
        let at = rng.usize(..=data.len());
        match rng.u8(..6) {
            0 if !data.is_empty() => {
                let i = rng.usize(..data.len());
                data[i] = rng.u8(..);
            }
            1 if !dictionary.is_empty() => {
                let token = dictionary[rng.usize(..dictionary.len())];
                data.splice(at..at, token.iter().copied());
            }
            2 if at < data.len() => {
                let end = rng.usize(at..=data.len().min(at + 8));
                data.drain(at..end);
            }
            3 if at < data.len() => {
                let end = rng.usize(at..=data.len().min(at + 16));
                let copy = data[at..end].to_vec();
                data.splice(at..at, copy);
            }
            4 => {
                let other = &seeds[rng.usize(..seeds.len())];
                let from = rng.usize(..=other.len());
                data.truncate(at);
                data.extend_from_slice(&other[from..]);
            }
            _ => data.truncate(at),
        }
    }
    data
}

/// Runs `target`'s body on its seeds and [`MUTATIONS`] mutations of them, `dictionary` words
/// spliced in to reach past the first checks of the grammar under test.
///
/// # Panics
/// On the first input the body panics on, printing that input.
pub fn run(target: &Target, dictionary: &[&[u8]]) {
    let seeds = corpus(target.name);
    // A fixed seed per target: the same inputs on every run, different across targets.
    let seed = target
        .name
        .bytes()
        .fold(0x5EED_u64, |h, b| h.wrapping_mul(31) ^ u64::from(b));
    let mut rng = fastrand::Rng::with_seed(seed);
    let inputs = seeds
        .iter()
        .cloned()
        .chain((0..MUTATIONS).map(|_| mutate(&mut rng, &seeds, dictionary)));
    for input in inputs {
        if catch_unwind(AssertUnwindSafe(|| (target.body)(&input))).is_err() {
            panic!(
                "fuzz target {} failed on b\"{}\"",
                target.name,
                input.escape_ascii()
            );
        }
    }
}

/// Every one of `targets` is a cargo-fuzz target: `fuzz/fuzz_targets/<name>.rs` calls its body
/// and `fuzz/Cargo.toml` builds it.
///
/// # Panics
/// When one is not.
pub fn assert_wired(targets: &[Target]) {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("fuzz/Cargo.toml: {e}"));
    for target in targets {
        let name = target.name;
        let source = std::fs::read_to_string(fuzz_dir().join(format!("fuzz_targets/{name}.rs")))
            .unwrap_or_else(|e| panic!("fuzz/fuzz_targets/{name}.rs: {e}"));
        assert!(
            source.contains(&format!("{}(", target.call)),
            "fuzz/fuzz_targets/{name}.rs must call {}",
            target.call
        );
        assert!(
            manifest.contains(&format!("name = \"{name}\""))
                && manifest.contains(&format!("path = \"fuzz_targets/{name}.rs\"")),
            "fuzz/Cargo.toml has no [[bin]] {name} at fuzz_targets/{name}.rs"
        );
    }
}
