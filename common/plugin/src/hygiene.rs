//! Process hygiene for a binary that holds tokens: no core dumps, no ptrace by peers.
//!
//! A provider holds node credentials, pods' service-account tokens and registry passwords in
//! memory. A core file would write them to disk (often to a crash collector that ships it off the
//! node); ptrace, `process_vm_readv` and `/proc/<pid>/mem` would let any other process of the
//! same user read them while the provider runs. [`apply`] closes both before anything secret is
//! read; [`crate::cli::start`] calls it first thing, so every provider gets it from its first
//! line.
//!
//! On Linux it clears the dumpable flag (`prctl(PR_SET_DUMPABLE, 0)`): the kernel then writes no
//! core file whatever `fs.suid_dumpable` and `core_pattern` say, makes `/proc/<pid>/` owned by
//! root, and refuses ptrace access to any process lacking `CAP_SYS_PTRACE`. It also sets
//! `RLIMIT_CORE` to 0, soft and hard, as a second lock (a child such as an AWS
//! `credential_process` inherits the limit; `execve` makes it dumpable again). Elsewhere it does
//! nothing yet. A failure never fails the run: the hardening is defence in depth, and a provider
//! that cannot answer is worse than one that answers without it.

use std::fmt;

/// The hygiene steps that could not be applied, each with the OS error. Shown as one line.
#[derive(Debug)]
pub struct Incomplete {
    failures: Vec<(&'static str, std::io::Error)>,
}

impl fmt::Display for Incomplete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("process hygiene incomplete")?;
        for (step, e) in &self.failures {
            write!(f, "; {step} failed: {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Incomplete {}

/// Makes this process non-dumpable and sets its core-file limit to 0 (Linux; a no-op elsewhere).
/// Call it before reading any secret, while the process has one thread. It only makes system
/// calls (no allocation, no logging) unless a step fails; the caller decides how to report that,
/// typically as one debug line once logging is up.
pub fn apply() -> Result<(), Incomplete> {
    imp::apply()
}

#[cfg(target_os = "linux")]
mod imp {
    use super::Incomplete;

    pub(super) fn apply() -> Result<(), Incomplete> {
        let mut failures = Vec::new();
        // SAFETY: PR_SET_DUMPABLE takes one integer argument (0 or 1); the unused arguments are
        // passed as 0, as prctl(2) asks. It touches no memory of ours.
        let rc = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0, 0, 0) };
        if rc != 0 {
            failures.push(("prctl(PR_SET_DUMPABLE, 0)", std::io::Error::last_os_error()));
        }
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `none` is a valid rlimit that outlives the call, which only reads it.
        let rc = unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) };
        if rc != 0 {
            failures.push(("setrlimit(RLIMIT_CORE, 0)", std::io::Error::last_os_error()));
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(Incomplete { failures })
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Incomplete;

    /// Nothing yet: the Windows port decides its own equivalent.
    pub(super) fn apply() -> Result<(), Incomplete> {
        Ok(())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Runs [`apply`] in a forked child (it changes the whole process, and the test harness must
    /// stay dumpable) and reports from there what the kernel says afterwards.
    #[test]
    fn apply_makes_the_process_non_dumpable_with_no_core_limit() {
        // SAFETY: the child only makes async-signal-safe system calls (prctl, setrlimit,
        // getrlimit, _exit) unless `apply` fails, and ends with _exit, never returning into the
        // harness; the parent reaps it with waitpid below.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            let code = child_verdict();
            // SAFETY: _exit ends the forked child at once, running nothing of the parent's.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: `pid` is our own child and `status` a valid place for its status.
        let reaped = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(reaped, pid, "waitpid: {}", std::io::Error::last_os_error());
        assert!(libc::WIFEXITED(status), "child status {status:#x}");
        let code = libc::WEXITSTATUS(status);
        assert_eq!(
            code,
            0,
            "{}",
            match code {
                1 => "apply() returned an error",
                2 => "PR_GET_DUMPABLE is not 0 after apply()",
                3 => "RLIMIT_CORE is not 0/0 after apply()",
                _ => "unexpected exit",
            }
        );
    }

    /// In the forked child: 0 when [`apply`] did everything it promises.
    fn child_verdict() -> i32 {
        if apply().is_err() {
            return 1;
        }
        // SAFETY: PR_GET_DUMPABLE takes no argument and returns the flag.
        if unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) } != 0 {
            return 2;
        }
        let mut limit = libc::rlimit {
            rlim_cur: libc::RLIM_INFINITY,
            rlim_max: libc::RLIM_INFINITY,
        };
        // SAFETY: `limit` is a valid rlimit for getrlimit to fill.
        let rc = unsafe { libc::getrlimit(libc::RLIMIT_CORE, &mut limit) };
        if rc != 0 || limit.rlim_cur != 0 || limit.rlim_max != 0 {
            return 3;
        }
        0
    }

    #[test]
    fn failures_show_as_one_line() {
        let e = Incomplete {
            failures: vec![
                (
                    "prctl(PR_SET_DUMPABLE, 0)",
                    std::io::Error::from_raw_os_error(libc::EINVAL),
                ),
                (
                    "setrlimit(RLIMIT_CORE, 0)",
                    std::io::Error::from_raw_os_error(libc::EPERM),
                ),
            ],
        };
        let line = e.to_string();
        assert!(
            line.starts_with("process hygiene incomplete; prctl(PR_SET_DUMPABLE, 0) failed: "),
            "{line}"
        );
        assert!(
            line.contains("; setrlimit(RLIMIT_CORE, 0) failed: ") && !line.contains('\n'),
            "{line}"
        );
    }
}
