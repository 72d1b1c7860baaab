//! The fuzz targets' bodies on stable Rust: every seed in `fuzz/corpus/<target>/` plus a few
//! thousand mutations of them from a fixed seed, so CI exercises the invariants even without
//! a nightly toolchain or cargo-fuzz. A failure prints the input as a Rust byte string, ready to
//! be saved as a new seed file.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use kcp_testkit::fuzz_bodies::TARGETS;

/// Mutated inputs per target on top of the seeds.
const MUTATIONS: usize = 4000;

/// Bytes the grammars under test care about, to make mutations reach past the first check.
const DICTIONARY: &[&[u8]] = &[
    b"\"",
    b"{",
    b"}",
    b":",
    b",",
    b"/",
    b".",
    b"*",
    b"?",
    b"[",
    b"]",
    b"\\",
    b"%",
    b"%25",
    b"@",
    b"\n",
    b"0",
    b"9",
    b"h",
    b"m",
    b"s",
    b"ms",
    "\u{b5}s".as_bytes(),
    b"null",
    b"\"auth\":",
    b"\"cacheDuration\":",
    b"\"cacheKeyType\":\"Registry\"",
    b"\"kind\":\"CredentialProviderResponse\"",
    b"\"kind\":\"CredentialProviderRequest\"",
    b"\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\"",
    b"\"image\":",
    b"\"serviceAccountToken\":",
    b"sha256:",
    b"docker.io",
    b"localhost",
    b":5000",
    b"\xff",
    b"\xc3\xa9",
];

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("seed corpus {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    let seeds: Vec<Vec<u8>> = entries
        .iter()
        .map(|path| std::fs::read(path).unwrap())
        .collect();
    assert!(
        seeds.len() >= 5,
        "{}: only {} seeds",
        dir.display(),
        seeds.len()
    );
    seeds
}

fn mutate(rng: &mut fastrand::Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
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
            1 => {
                let token = DICTIONARY[rng.usize(..DICTIONARY.len())];
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

fn run(target: &str) {
    let body = TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, body)| *body)
        .unwrap();
    let seeds = corpus(target);
    // A fixed seed per target: the same inputs on every run, different across targets.
    let seed = target
        .bytes()
        .fold(0x5EED_u64, |h, b| h.wrapping_mul(31) ^ u64::from(b));
    let mut rng = fastrand::Rng::with_seed(seed);
    let inputs = seeds
        .iter()
        .cloned()
        .chain((0..MUTATIONS).map(|_| mutate(&mut rng, &seeds)));
    for input in inputs {
        if catch_unwind(AssertUnwindSafe(|| body(&input))).is_err() {
            panic!(
                "fuzz target {target} failed on b\"{}\"",
                input.escape_ascii()
            );
        }
    }
}

#[test]
fn request() {
    run("request");
}

#[test]
fn image() {
    run("image");
}

#[test]
fn matching() {
    run("matching");
}

#[test]
fn duration() {
    run("duration");
}

#[test]
fn kubelet_response() {
    run("kubelet_response");
}

#[test]
fn every_target_has_a_smoke_test_and_a_fuzz_target() {
    let names: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        names,
        [
            "request",
            "image",
            "matching",
            "duration",
            "kubelet_response"
        ]
    );
    let fuzz = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let manifest = std::fs::read_to_string(fuzz.join("Cargo.toml")).unwrap();
    for name in names {
        let source = std::fs::read_to_string(fuzz.join(format!("fuzz_targets/{name}.rs")))
            .unwrap_or_else(|e| panic!("fuzz/fuzz_targets/{name}.rs: {e}"));
        assert!(
            source.contains(&format!("fuzz_bodies::{name}(")),
            "fuzz/fuzz_targets/{name}.rs must call fuzz_bodies::{name}"
        );
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml has no [[bin]] {name}"
        );
    }
}
