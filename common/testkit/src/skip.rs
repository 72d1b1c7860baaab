//! Tests that do not run say so where people look, and never pass by skipping in CI.
//!
//! Two kinds of skip:
//!
//! - [`missing`]: a prerequisite of this machine is absent (root, openssl, kubectl,
//!   moto_server, a chroot). With [`REQUIRE_ENV`]`=1` (`scripts/test` sets it under CI, where it
//!   installs every prerequisite) the test fails there, naming what is missing; otherwise the
//!   skip is recorded and the test returns.
//! - [`not_applicable`]: the test is about something the platform under test does not have
//!   (Linux process hygiene under wine). Recorded, never a failure.
//!
//! A recorded skip is one line on the test process's real stderr (libtest captures only the
//! print macros, and shows a passing test's captured output to nobody) and one line appended to
//! `<dir>/<platform>.log`, `<dir>` being [`DIR_ENV`] or `skips/` in the cargo target directory
//! holding the test binary, `<platform>` [`platform`]. `scripts/test` and `scripts/cross-test`
//! count those logs per platform and reason at their end.
//!
//! ```ignore
//! if !running_as_root() {
//!     return kcp_testkit::skip::missing("root", "chown of the key file to another uid");
//! }
//! ```

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Set to `1` to turn every [`missing`] prerequisite into a test failure (CI).
pub const REQUIRE_ENV: &str = "KCP_REQUIRE_ALL";
/// The directory of the skip logs, when not `skips/` in the target directory.
pub const DIR_ENV: &str = "KCP_SKIP_DIR";

/// Whether a missing prerequisite fails the test ([`REQUIRE_ENV`] is `1`).
pub fn required() -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1")
}

/// The platform whose binaries are under test: `native`, or the cross target's triple
/// (`scripts/cross-test`'s `KCP_TEST_TARGET`). Names the skip log.
pub fn platform() -> String {
    crate::cross_target().unwrap_or_else(|| "native".to_owned())
}

/// A prerequisite of the calling test is missing: under [`required`] this panics (the test
/// fails, naming `prerequisite` and `why` the test needs it); otherwise the skip is recorded
/// and the caller returns.
#[track_caller]
pub fn missing(prerequisite: &str, why: &str) {
    skip(
        &Skip::Missing { prerequisite, why },
        required(),
        log_dir().as_deref(),
        &mut std::io::stderr(),
    );
}

/// The calling test does not apply to the platform under test (`why` says why): recorded,
/// never a failure.
pub fn not_applicable(why: &str) {
    skip(
        &Skip::NotApplicable { why },
        false,
        log_dir().as_deref(),
        &mut std::io::stderr(),
    );
}

enum Skip<'a> {
    Missing { prerequisite: &'a str, why: &'a str },
    NotApplicable { why: &'a str },
}

impl Skip<'_> {
    /// The reason as the summaries group it.
    fn reason(&self) -> String {
        match self {
            Skip::Missing { prerequisite, why } => format!("missing {prerequisite}: {why}"),
            Skip::NotApplicable { why } => format!("not applicable: {why}"),
        }
    }
}

#[track_caller]
fn skip(skip: &Skip<'_>, required: bool, dir: Option<&Path>, stderr: &mut dyn std::io::Write) {
    let test = test_name();
    let reason = skip.reason();
    if required && matches!(skip, Skip::Missing { .. }) {
        panic!("{test}: {reason} ({REQUIRE_ENV}=1 makes a missing prerequisite a failure)");
    }
    let platform = platform();
    let _ = writeln!(stderr, "SKIPPED on {platform}: {test}: {reason}");
    let Some(dir) = dir else { return };
    let line = format!("{test}\t{}\n", reason.replace(['\n', '\r', '\t'], " "));
    // One `write` of one short line in append mode: lines of tests running at once do not mix.
    let written = std::fs::create_dir_all(dir).and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(format!("{platform}.log")))?
            .write_all(line.as_bytes())
    });
    if let Err(e) = written {
        let _ = writeln!(
            stderr,
            "recording the skip in {} failed: {e}",
            dir.display()
        );
    }
}

/// `<test binary>::<test>`: libtest names each test's thread after the test.
fn test_name() -> String {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.file_stem().map(|s| s.to_string_lossy().into_owned()))
        // Cargo's `<name>-<hash>`.
        .map(|stem| match stem.rsplit_once('-') {
            Some((name, _)) => name.to_owned(),
            None => stem,
        })
        .unwrap_or_else(|| "?".to_owned());
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    format!("{binary}::{test}")
}

/// [`DIR_ENV`], else `skips/` in the target directory the test binary was built in (the
/// nearest ancestor holding cargo's `CACHEDIR.TAG`).
fn log_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(DIR_ENV).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let exe = std::env::current_exe().ok()?;
    exe.ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .map(|target| target.join("skips"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(dir: &Path) -> String {
        std::fs::read_to_string(dir.join(format!("{}.log", platform()))).unwrap()
    }

    #[test]
    fn a_missing_prerequisite_is_recorded_with_its_reason() {
        let dir = crate::TempDir::new("skips");
        let missing = Skip::Missing {
            prerequisite: "kubectl",
            why: "compares the overlays",
        };
        let mut stderr = Vec::new();
        skip(&missing, false, Some(dir.path()), &mut stderr);
        skip(
            &Skip::NotApplicable { why: "Linux only" },
            false,
            Some(dir.path()),
            &mut stderr,
        );
        let test = test_name();
        assert_eq!(
            String::from_utf8(stderr).unwrap(),
            format!(
                "SKIPPED on native: {test}: missing kubectl: compares the overlays\n\
                 SKIPPED on native: {test}: not applicable: Linux only\n"
            )
        );
        assert!(
            test.ends_with("::skip::tests::a_missing_prerequisite_is_recorded_with_its_reason"),
            "{test}"
        );
        assert_eq!(
            log(dir.path()),
            format!(
                "{test}\tmissing kubectl: compares the overlays\n{test}\tnot applicable: Linux only\n"
            )
        );
    }

    #[test]
    fn required_makes_a_missing_prerequisite_a_failure_naming_it() {
        let dir = crate::TempDir::new("skips");
        let missing = Skip::Missing {
            prerequisite: "openssl",
            why: "makes the RSA keys",
        };
        let mut stderr = Vec::new();
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            skip(&missing, true, Some(dir.path()), &mut stderr)
        }))
        .expect_err("a failure");
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(
            message.contains("missing openssl: makes the RSA keys (KCP_REQUIRE_ALL=1"),
            "{message}"
        );
        assert!(!dir.path().join(format!("{}.log", platform())).exists());
        assert!(stderr.is_empty());
        // Not applicable is never a failure.
        skip(
            &Skip::NotApplicable { why: "Linux only" },
            true,
            Some(dir.path()),
            &mut stderr,
        );
        assert!(log(dir.path()).ends_with("\tnot applicable: Linux only\n"));
    }
}
