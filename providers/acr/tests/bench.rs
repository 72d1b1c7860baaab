//! Speed figures, not a timed test: binary size, and wall time, CPU time and peak RSS of cold
//! execs against the local fakes. Targets (issue 4): ≤ 4 MB stripped, ≤ 3 ms CPU, ≤ 6.5 MiB RSS.
//!
//! ```text
//! cargo test -p acr-credential-provider --release --test bench -- --ignored --nocapture
//! ```
//!
//! Figures from a debug build are printed too but mean little; use `--release`.

mod support;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kcp_common::ApiVersion;
use kcp_common::protocol::encode_request;
use support::*;

const RUNS: usize = 20;

struct Sample {
    wall: Duration,
    cpu: Duration,
    max_rss_kib: i64,
}

/// Runs the plugin once and measures it with `wait4`.
fn run_once(world: &World, config: &str, extra_env: &[(&str, String)]) -> Sample {
    let home = kcp_common::testkit::TempDir::new("bench-home");
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("SSL_CERT_FILE", world.ca.ca_file())
        .env("HTTPS_PROXY", world.proxy.url())
        .env("AZURE_AUTHORITY_HOST", world.entra.https_url())
        .arg(config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let request = encode_request(
        ApiVersion::V1,
        "myreg.azurecr.io/app",
        None,
        &Default::default(),
    );
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn the plugin");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&request)
        .expect("write the request");
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read stdout");
    let mut status = 0;
    // SAFETY: plain syscall on our own child; `usage` is a valid out-pointer.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = i32::try_from(child.id()).expect("pid");
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    assert_eq!(reaped, pid, "wait4 failed");
    // Already reaped by wait4; this only tells std so (clippy's zombie check).
    let _ = child.try_wait();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "plugin failed: {stdout}"
    );
    assert!(stdout.contains("CredentialProviderResponse"), "{stdout}");
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    Sample {
        wall,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss,
    }
}

fn report(label: &str, samples: &mut [Sample]) {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let wall = median(samples.iter().map(|s| ms(s.wall)).collect());
    let cpu = median(samples.iter().map(|s| ms(s.cpu)).collect());
    let cpu_min = samples.iter().map(|s| ms(s.cpu)).fold(f64::MAX, f64::min);
    let rss = samples.iter().map(|s| s.max_rss_kib).max().unwrap_or(0) as f64 / 1024.0;
    println!(
        "{label:<34} runs {:>2}  wall median {wall:>6.1} ms  CPU median {cpu:>5.2} ms (min {cpu_min:.2})  peak RSS {rss:.2} MiB",
        samples.len()
    );
}

#[test]
#[ignore]
fn bench_cold_exec() {
    let size = std::fs::metadata(BIN).map(|m| m.len()).unwrap_or(0);
    println!(
        "binary {BIN}: {size} bytes ({:.2} MiB){}",
        size as f64 / 1048576.0,
        if cfg!(debug_assertions) {
            "  [debug build: use --release for real figures]"
        } else {
            ""
        }
    );
    let world = World::new();
    let sp = world.config(&format!(
        r#"{{"tenantId":"t","aadClientId":"c","aadClientSecret":"{CLIENT_SECRET}"}}"#
    ));
    let mut samples: Vec<Sample> = (0..RUNS).map(|_| run_once(&world, &sp, &[])).collect();
    report("service principal + exchange", &mut samples);

    let mi = world.file("mi.json", r#"{"useManagedIdentityExtension":true}"#);
    let env = [
        (
            "IDENTITY_ENDPOINT",
            format!("{}/msi/token", world.msi.url()),
        ),
        ("IDENTITY_HEADER", IDENTITY_HEADER.to_owned()),
    ];
    let mut samples: Vec<Sample> = (0..RUNS).map(|_| run_once(&world, &mi, &env)).collect();
    report("managed identity + exchange", &mut samples);

    let mut samples: Vec<Sample> = (0..RUNS)
        .map(|_| {
            let home = kcp_common::testkit::TempDir::new("bench-home");
            let started = Instant::now();
            let mut child = Command::new(BIN)
                .env_clear()
                .env("HOME", home.path())
                .arg("--version")
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn");
            let pid = i32::try_from(child.id()).expect("pid");
            let mut status = 0;
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            let _ = child.try_wait();
            let tv = |t: libc::timeval| {
                Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
            };
            Sample {
                wall: started.elapsed(),
                cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
                max_rss_kib: usage.ru_maxrss,
            }
        })
        .collect();
    report("--version (process floor)", &mut samples);
}
