//! Runs a command N times with a request on stdin and prints, per run, wall time, CPU time and
//! peak RSS of that process alone: `wall_us cpu_us maxrss_kib exit_code`.
//!
//! Why not measure from Python: the kernel records the parent's resident size at `exec` in the
//! child's peak RSS, so any process forked from a 15 MiB interpreter reports at least 15 MiB.
//! This launcher is a few hundred KiB, well under what it measures. Used by `scripts/bench`.
//!
//! Usage: exec_measure RUNS STDIN_FILE -- COMMAND [ARGS...]
// A development tool, not a plugin.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(runs), Some(stdin_file), Some(sep)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("usage: exec_measure RUNS STDIN_FILE -- COMMAND [ARGS...]");
        std::process::exit(2);
    };
    let (Ok(runs), true, Some(command)) = (runs.parse::<u32>(), sep == "--", args.get(4)) else {
        eprintln!("usage: exec_measure RUNS STDIN_FILE -- COMMAND [ARGS...]");
        std::process::exit(2);
    };
    let input = std::fs::read(stdin_file).unwrap_or_else(|e| {
        eprintln!("reading {stdin_file}: {e}");
        std::process::exit(2)
    });
    for _ in 0..runs {
        let started = Instant::now();
        // Reaped below with wait4, which std's Child cannot do (it would lose the rusage).
        #[allow(clippy::zombie_processes)]
        let mut child = Command::new(command)
            .args(&args[5..])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                eprintln!("starting {command}: {e}");
                std::process::exit(2)
            });
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(&input);
        }
        let pid = child.id() as libc::pid_t;
        let mut status = 0;
        // SAFETY: rusage is plain data, fully written by wait4 on success.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waiting for our own child; status and usage point to valid memory.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        let wall = started.elapsed();
        if rc != pid {
            eprintln!("wait4 failed: {}", std::io::Error::last_os_error());
            std::process::exit(2);
        }
        let micros = |t: libc::timeval| t.tv_sec * 1_000_000 + t.tv_usec;
        let cpu = micros(usage.ru_utime) + micros(usage.ru_stime);
        let code = if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -1
        };
        println!("{} {} {} {}", wall.as_micros(), cpu, usage.ru_maxrss, code);
    }
}
