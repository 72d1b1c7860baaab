//! The command line every provider binary must read alike (issue #25): a flag it does not know is
//! refused (exit 2, one stderr line naming it and the closest known flag) before the request is
//! read, instead of being dropped; the klog flags its upstream registers are taken in every Go
//! spelling; a boolean flag never takes the next word; and `-v 4`, `-v=4`, `--v=4`, `--v 4`, `-v4`
//! all mean verbosity 4.
//!
//! The klog flag lists here are written from the upstream sources, independently of the tables
//! the binaries use (`kcp_provider_args::flags`), so a wrong table fails these tests.
//!
//! ```ignore
//! // In a provider's tests, with a plugin that answers `image` when the input is good:
//! kcp_testkit::flags::assert_refuses(&plugin, image, &kcp_testkit::flags::shared_refusals());
//! assert_eq!(fake.requests().len(), 0);
//! ```

use kcp_kubelet::ApiVersion;

use super::Plugin;

/// What `klog.InitFlags` registers (klog v2.140), but `v`: each name with a value to give it, or
/// `None` for a boolean. `auth-provider-gcp` (GCR's upstream) takes them all.
pub const KLOG_INIT_FLAGS: [(&str, Option<&str>); 14] = [
    ("log_dir", Some("/tmp/klog")),
    ("log_file", Some("/tmp/klog/x.log")),
    ("log_file_max_size", Some("10")),
    ("logtostderr", None),
    ("alsologtostderr", None),
    ("legacy_stderr_threshold_behavior", None),
    ("add_dir_header", None),
    ("skip_headers", None),
    ("one_output", None),
    ("skip_log_headers", None),
    ("stderrthreshold", Some("INFO")),
    ("alsologtostderrthreshold", Some("INFO")),
    ("vmodule", Some("main=4")),
    ("log_backtrace_at", Some("main.go:1")),
];

/// What component-base's `logs.AddFlags` registers beside `v`: the ACR upstream's klog flags.
pub const COMPONENT_BASE_FLAGS: [(&str, Option<&str>); 2] = [
    ("vmodule", Some("main=4")),
    ("log-flush-frequency", Some("5s")),
];

/// One command line to refuse: the arguments to add, and the message the one stderr line must
/// end with (before ` (see --help)`).
#[derive(Debug, Clone)]
pub struct Refusal {
    /// Arguments added after the plugin's own.
    pub args: Vec<String>,
    /// The message.
    pub message: String,
}

impl Refusal {
    /// A case from string slices.
    pub fn new(args: &[&str], message: &str) -> Refusal {
        Refusal {
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            message: message.to_owned(),
        }
    }
}

/// Cases every provider refuses with the same line: unknown flags in each spelling, typos of the
/// shared flags (with the suggestion), and a boolean's value as a separate word.
pub fn shared_refusals() -> Vec<Refusal> {
    vec![
        Refusal::new(&["--bogus"], "unknown flag --bogus"),
        Refusal::new(&["--bogus=1"], "unknown flag --bogus"),
        Refusal::new(&["-bogus", "x"], "unknown flag -bogus"),
        Refusal::new(
            &["--deadlin=3s"],
            "unknown flag --deadlin (did you mean --deadline?)",
        ),
        Refusal::new(
            &["--token-cach"],
            "unknown flag --token-cach (did you mean --token-cache?)",
        ),
        Refusal::new(
            &["-cache-jiter", "0"],
            "unknown flag -cache-jiter (did you mean --cache-jitter?)",
        ),
        Refusal::new(
            &["--token-cache", "false"],
            "unexpected argument \"false\" after --token-cache: a boolean flag takes its value as --token-cache=false",
        ),
    ]
}

/// Refusals of klog flags that `binary`'s upstream does not register.
pub fn klog_refusals(binary: &str, names: &[&str]) -> Vec<Refusal> {
    names
        .iter()
        .map(|name| {
            Refusal::new(
                &[&format!("--{name}=1")],
                &format!(
                    "unknown flag --{name} (upstream's {binary} does not take this klog flag either)"
                ),
            )
        })
        .collect()
}

/// Runs `plugin` with each case's arguments added and a good request for `image` on stdin, and
/// asserts the command line is refused: exit 2, nothing on stdout, exactly one stderr line, an
/// ERROR ending in `<message> (see --help)`. A good request makes sure the refusal comes from the
/// command line alone; the caller checks its fakes saw nothing.
pub fn assert_refuses(plugin: &Plugin, image: &str, cases: &[Refusal]) {
    for case in cases {
        let out = plugin
            .clone()
            .args(case.args.iter().cloned())
            .request(ApiVersion::V1, image);
        let line = out.rejected();
        assert_eq!(out.exec.exit_code, Some(2), "{:?}: {line}", case.args);
        let wanted = format!("ERROR {} (see --help)", case.message);
        assert!(
            line.ends_with(&wanted),
            "{:?}: the line {line:?} does not end with {wanted:?}",
            case.args
        );
    }
}

/// Every Go spelling of each klog flag: `--name=value`, `--name value`, `-name=value`,
/// `-name value` for a value; `--name`, `-name`, `--name=false`, `-name=true` for a boolean.
pub fn klog_spellings(flags: &[(&str, Option<&str>)]) -> Vec<String> {
    let mut args = Vec::new();
    for (name, value) in flags {
        match value {
            Some(value) => {
                args.push(format!("--{name}={value}"));
                args.extend([format!("--{name}"), (*value).to_owned()]);
                args.push(format!("-{name}={value}"));
                args.extend([format!("-{name}"), (*value).to_owned()]);
            }
            None => {
                args.push(format!("--{name}"));
                args.push(format!("-{name}"));
                args.push(format!("--{name}=false"));
                args.push(format!("-{name}=true"));
            }
        }
    }
    args
}

/// The spellings of verbosity 4 that every provider takes alike.
pub const LEVEL_4: [&[&str]; 6] = [
    &["-v", "4"],
    &["-v=4"],
    &["--v=4"],
    &["--v", "4"],
    &["-v4"],
    &["-vvvv"],
];

/// Asserts that each spelling in [`LEVEL_4`], put before and after `word` (`get-credentials`;
/// `None` for ACR, which takes no such word), answers `image` and logs at debug level, while
/// `-v 2` answers without a debug line: `-v 4` is the level 4, not one `-v` and a stray `4`.
pub fn assert_verbosity_spellings(plugin: &Plugin, image: &str, word: Option<&str>) {
    let debug_lines = |args: &[&str]| {
        let out = plugin
            .clone()
            .args(args.iter().copied())
            .request(ApiVersion::V1, image);
        out.accepted();
        out.stderr()
            .lines()
            .filter(|l| l.contains(" DEBUG "))
            .count()
    };
    for spelling in LEVEL_4 {
        let before: Vec<&str> = spelling.iter().copied().chain(word).collect();
        let after: Vec<&str> = word.into_iter().chain(spelling.iter().copied()).collect();
        for args in [before, after] {
            assert!(debug_lines(&args) > 0, "{args:?} logs at debug level");
        }
    }
    assert_eq!(debug_lines(&["-v", "2"]), 0, "-v 2 logs no debug line");
}
