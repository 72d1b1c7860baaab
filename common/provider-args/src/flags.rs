//! The command lines of this project's provider binaries as the kubelet passes them (a config's
//! `args`): Go's flag syntax, each binary's flags, and the one check the binaries and the checker
//! share, so a typo in `args` is refused the same way by both.
//!
//! Upstream plugins parse with pflag (cobra), which refuses any flag it does not know. We do the
//! same: a flag outside a binary's own set and the klog flags its upstream registers is an error,
//! because dropping it would let a typo (`--strict-host`) silently turn a safety check off.
//!
//! Syntax, as pflag and Go's `flag` read it:
//! - long flags with one or two dashes: `--name=value`, `--name value`, `-name=value`, `-name value`;
//! - a boolean flag takes a value only as `--name=value`: the next word is never its value;
//! - short flags `-r value`, `-r=value`, `-rvalue`; `--` ends the flags;
//! - `-v N`, `-vN`, `-v=N` mean `--v=N`; `-v`, `-vv`, … count (one level per `v`), as before.
//!
//! The binaries take their own flags from their clap parser (`kcp_plugin::cli`), so a new flag is
//! accepted as soon as it is in the parser; the tables here ([`ECR`], [`ACR`], [`GCR`],
//! [`STATIC`], [`OIDC`]) are what the checker reads, and each provider's unit test
//! `flag_table_matches_the_parser` proves its table equals its parser.

use std::borrow::Cow;

/// How a flag takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// Takes a value: `--name=value` or `--name value`.
    Value,
    /// A Go boolean: `--name` or `--name=value`, never the next word.
    Bool,
    /// Counted by repetition (`-vvv`); `-v N` is the long value flag of the same name.
    Count,
    /// `--help` and `--version`: print and exit 0 instead of answering.
    Exit,
}

/// One flag: a long name, a short letter, or both.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Flag {
    /// The long name, without dashes.
    pub long: Option<Cow<'static, str>>,
    /// The short letter.
    pub short: Option<char>,
    /// How it takes its value.
    pub kind: Kind,
}

impl Flag {
    /// A long-only flag.
    pub const fn long(name: &'static str, kind: Kind) -> Flag {
        Flag {
            long: Some(Cow::Borrowed(name)),
            short: None,
            kind,
        }
    }

    /// A flag with a long name and a short letter.
    pub const fn both(name: &'static str, short: char, kind: Kind) -> Flag {
        Flag {
            long: Some(Cow::Borrowed(name)),
            short: Some(short),
            kind,
        }
    }

    /// A short-only flag.
    pub const fn short(short: char, kind: Kind) -> Flag {
        Flag {
            long: None,
            short: Some(short),
            kind,
        }
    }
}

/// What a binary does with words that are not flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Positionals {
    /// Only `get-credentials` (upstream's subcommand, as configs pass it), any number of times.
    GetCredentials,
    /// Exactly one word: the cloud config file (ACR, as upstream).
    ConfigFile,
}

impl Positionals {
    /// Checks the positional words; the error is one line without a trailing hint.
    pub fn check(self, words: &[String]) -> Result<(), String> {
        match self {
            Positionals::GetCredentials => match words.iter().find(|w| *w != "get-credentials") {
                None => Ok(()),
                Some(word) => Err(format!(
                    "unexpected argument {word:?}: this provider takes no arguments but get-credentials"
                )),
            },
            Positionals::ConfigFile => match words.len() {
                0 => Err("config file is not specified: pass the cloud config file (usually /etc/kubernetes/azure.json) as the only argument in the kubelet's CredentialProviderConfig args".to_owned()),
                1 => Ok(()),
                _ => Err(format!(
                    "expected exactly one argument (config file); got arguments: {words:?}"
                )),
            },
        }
    }
}

/// A provider binary's command line.
#[derive(Debug, Clone, Copy)]
pub struct ProviderFlags {
    /// The binary's name, as a config's `name` gives it.
    pub binary: &'static str,
    /// Its own flags, beyond [`COMMON`].
    pub own: &'static [Flag],
    /// The klog flags its upstream registers (beyond `v`): accepted and ignored.
    pub klog: &'static [Flag],
    /// What it does with words that are not flags.
    pub positionals: Positionals,
}

impl ProviderFlags {
    /// Every flag the binary's parser knows: its own and [`COMMON`].
    pub fn known(&self) -> Vec<Flag> {
        self.own.iter().chain(COMMON).cloned().collect()
    }

    /// Every problem the binary would refuse `args` for (each one line), in order; empty when
    /// it would take them. Values are not checked here (the binary's parser does that), nor the
    /// positional words once a flag is wrong, as an unknown flag may have taken one as its value.
    pub fn problems(&self, args: &[String]) -> Vec<String> {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let parsed = parse(&self.known(), self.klog, self.binary, &args);
        let mut problems = parsed.errors;
        if problems.is_empty()
            && let Err(e) = self.positionals.check(&parsed.positionals)
        {
            problems.push(e);
        }
        problems.extend(parsed.exits.iter().map(|flag| {
            format!("{flag} makes the plugin print text and exit 0 instead of answering")
        }));
        problems
    }
}

/// The flags every provider shares (`kcp_plugin::settings::CommonArgs`), and clap's help and
/// version.
pub const COMMON: &[Flag] = &[
    Flag::short('v', Kind::Count),
    Flag::long("v", Kind::Value),
    Flag::long("deadline", Kind::Value),
    Flag::long("token-cache", Kind::Bool),
    Flag::long("token-cache-dir", Kind::Value),
    Flag::long("token-cache-shared-identity", Kind::Value),
    Flag::long("cache-jitter", Kind::Value),
    Flag::long("metrics-file", Kind::Value),
    Flag::both("help", 'h', Kind::Exit),
    Flag::both("version", 'V', Kind::Exit),
];

/// klog's own flags (`klog.InitFlags`, klog v2.140) but `v`, which [`COMMON`] has; extra
/// entries after them.
macro_rules! klog_init_flags {
    ($($extra:expr),*) => {
        [
            Flag::long("log_dir", Kind::Value),
            Flag::long("log_file", Kind::Value),
            Flag::long("log_file_max_size", Kind::Value),
            Flag::long("logtostderr", Kind::Bool),
            Flag::long("alsologtostderr", Kind::Bool),
            Flag::long("legacy_stderr_threshold_behavior", Kind::Bool),
            Flag::long("add_dir_header", Kind::Bool),
            Flag::long("skip_headers", Kind::Bool),
            Flag::long("one_output", Kind::Bool),
            Flag::long("skip_log_headers", Kind::Bool),
            Flag::long("stderrthreshold", Kind::Value),
            Flag::long("alsologtostderrthreshold", Kind::Value),
            Flag::long("vmodule", Kind::Value),
            Flag::long("log_backtrace_at", Kind::Value),
            $($extra),*
        ]
    };
}

/// component-base's `logs.AddFlags` (v0.36) registers klog's `v` and `vmodule` only, and its own
/// flush interval.
const LOG_FLUSH_FREQUENCY: Flag = Flag::long("log-flush-frequency", Kind::Value);

/// What `klog.InitFlags` registers (but `v`).
const KLOG_INIT_FLAGS: [Flag; 14] = klog_init_flags!();

/// Every klog flag any upstream registers (but `v`), for the hint on one that this binary's
/// upstream does not take.
const KLOG_ANY: [Flag; 15] = klog_init_flags!(LOG_FLUSH_FREQUENCY);

/// `ecr-credential-provider`. Upstream (kubernetes/cloud-provider-aws) is a cobra command that
/// registers no klog flags at all (it never calls `logs.AddFlags`): only `--help` and `--version`.
pub const ECR: ProviderFlags = ProviderFlags {
    binary: "ecr-credential-provider",
    own: &[
        Flag::long("strict-hosts", Kind::Bool),
        Flag::long("role-annotation-key", Kind::Value),
        // The flag's earlier name, kept as an alias.
        Flag::long("role-arn-annotation", Kind::Value),
        Flag::both("registry-mirror", 'r', Kind::Value),
        Flag::long("assume-role", Kind::Value),
        Flag::long("assume-role-external-id", Kind::Value),
        Flag::long("eks-pod-identity-cluster", Kind::Value),
        Flag::long("eks-pod-identity-region", Kind::Value),
        Flag::long("roles-anywhere-certificate", Kind::Value),
        Flag::long("roles-anywhere-private-key", Kind::Value),
        Flag::long("roles-anywhere-intermediates", Kind::Value),
        Flag::long("roles-anywhere-trust-anchor-arn", Kind::Value),
        Flag::long("roles-anywhere-profile-arn", Kind::Value),
        Flag::long("roles-anywhere-role-arn", Kind::Value),
        Flag::long("roles-anywhere-session-duration", Kind::Value),
    ],
    klog: &[],
    positionals: Positionals::GetCredentials,
};

/// `acr-credential-provider`. Upstream (kubernetes-sigs/cloud-provider-azure) adds
/// component-base's `logs.AddFlags`: `-v`/`--v`, `--vmodule`, `--log-flush-frequency`.
pub const ACR: ProviderFlags = ProviderFlags {
    binary: "acr-credential-provider",
    own: &[
        Flag::both("registry-mirror", 'r', Kind::Value),
        Flag::long("service-principal-passthrough", Kind::Bool),
        Flag::long("token-scope", Kind::Value),
        Flag::long("ib-sni-name", Kind::Value),
        Flag::long("ib-apiserver-ip", Kind::Value),
        Flag::long("ib-default-client-id", Kind::Value),
        Flag::long("ib-default-tenant-id", Kind::Value),
        Flag::long("ib-ca-file", Kind::Value),
    ],
    klog: &[Flag::long("vmodule", Kind::Value), LOG_FLUSH_FREQUENCY],
    positionals: Positionals::ConfigFile,
};

/// `gcr-credential-provider`. Upstream `auth-provider-gcp` (kubernetes/cloud-provider-gcp) merges
/// every flag of `klog.InitFlags` into its root command.
pub const GCR: ProviderFlags = ProviderFlags {
    binary: "gcr-credential-provider",
    own: &[
        Flag::both("authFlow", 'a', Kind::Value),
        Flag::long("identity-provider", Kind::Value),
        Flag::long("project-id", Kind::Value),
        Flag::long("wif-audience", Kind::Value),
        Flag::long("impersonate-service-account", Kind::Value),
        Flag::long("sts-endpoint", Kind::Value),
        Flag::long("iam-endpoint", Kind::Value),
        Flag::long("metadata-host", Kind::Value),
        Flag::long("json-key", Kind::Value),
        Flag::long("google-json-key", Kind::Value),
        Flag::long("username", Kind::Value),
        Flag::long("strict-hosts", Kind::Bool),
    ],
    klog: &KLOG_INIT_FLAGS,
    positionals: Positionals::GetCredentials,
};

/// `static-credential-provider`. No upstream: it takes every klog flag the other providers'
/// upstreams register, so a config copied from any of them works.
pub const STATIC: ProviderFlags = ProviderFlags {
    binary: "static-credential-provider",
    own: &[
        Flag::long("registry", Kind::Value),
        Flag::long("username", Kind::Value),
        Flag::long("password-file", Kind::Value),
        Flag::long("cache-duration", Kind::Value),
    ],
    klog: &KLOG_ANY,
    positionals: Positionals::GetCredentials,
};

/// `oidc-credential-provider`. No upstream: like [`STATIC`], it takes every klog flag the other
/// providers' upstreams register, so a config copied from any of them works.
pub const OIDC: ProviderFlags = ProviderFlags {
    binary: "oidc-credential-provider",
    own: &[Flag::long("config", Kind::Value)],
    klog: &KLOG_ANY,
    positionals: Positionals::GetCredentials,
};

/// `alibaba-credential-provider`. No upstream: like [`STATIC`], it takes every klog flag the
/// other providers' upstreams register, so a config copied from any of them works.
pub const ALIBABA: ProviderFlags = ProviderFlags {
    binary: "alibaba-credential-provider",
    own: &[
        Flag::long("instance", Kind::Value),
        Flag::long("region", Kind::Value),
        Flag::long("oidc-provider-arn", Kind::Value),
        Flag::long("account-id", Kind::Value),
        Flag::long("role-annotation-key", Kind::Value),
        Flag::long("session-duration", Kind::Value),
        Flag::long("metadata-endpoint", Kind::Value),
        Flag::long("sts-endpoint", Kind::Value),
        Flag::long("cr-endpoint", Kind::Value),
    ],
    klog: &KLOG_ANY,
    positionals: Positionals::GetCredentials,
};

/// This project's providers.
pub const PROVIDERS: [&ProviderFlags; 6] = [&ECR, &ACR, &GCR, &STATIC, &OIDC, &ALIBABA];

/// The provider whose binary a config's `name` runs (`.exe` allowed, as on Windows), if it is
/// one of ours.
pub fn for_binary(name: &str) -> Option<&'static ProviderFlags> {
    let lower = name.to_ascii_lowercase();
    let bare = lower.strip_suffix(".exe").unwrap_or(&lower);
    PROVIDERS.into_iter().find(|p| p.binary == bare)
}

/// A command line read against a flag set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The known flags in one unambiguous spelling for clap (`--name=value`, `--name`, `-v`),
    /// klog flags left out.
    pub flags: Vec<String>,
    /// The words that are not flags, in order.
    pub positionals: Vec<String>,
    /// Every refusal, one line each, in order.
    pub errors: Vec<String>,
    /// The `--help`/`--version` flags met, as written.
    pub exits: Vec<String>,
}

/// Reads `args` (without the program name) against `known` (the binary's own flags, clap's
/// help and version included) and `klog` (accepted and ignored). `binary` names the binary in
/// the hint on a klog flag it does not take.
pub fn parse(known: &[Flag], klog: &[Flag], binary: &str, args: &[&str]) -> Parsed {
    let mut out = Parsed::default();
    let lookup_long = |name: &str| {
        let is = |f: &&Flag| f.long.as_deref() == Some(name);
        known
            .iter()
            .find(is)
            .map(|f| (f, false))
            .or_else(|| klog.iter().find(is).map(|f| (f, true)))
    };
    let mut words = args.iter().copied().peekable();
    // The last bare boolean flag, for the hint when its value follows as a separate word.
    let mut bare_bool: Option<(String, &str)> = None;
    while let Some(word) = words.next() {
        let after_bool = bare_bool.take();
        if word == "--" {
            out.positionals.extend(words.by_ref().map(str::to_owned));
            break;
        }
        let Some(body) = word.strip_prefix('-').filter(|b| !b.is_empty()) else {
            if let Some((flag, name)) = after_bool
                && is_go_bool(word)
            {
                out.errors.push(format!(
                    "unexpected argument {word:?} after {flag}: a boolean flag takes its value as --{name}={word}"
                ));
            }
            out.positionals.push(word.to_owned());
            continue;
        };
        let double = body.starts_with('-');
        let body = body.strip_prefix('-').unwrap_or(body);
        let (name, inline) = match body.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (body, None),
        };
        let written = format!("{}{name}", if double { "--" } else { "-" });
        // A long name (Go takes one dash too); a single letter after one dash is short.
        let long = if double || name.chars().nth(1).is_some() {
            lookup_long(name)
        } else {
            None
        };
        let Some((flag, ignored)) = long else {
            if double || !short_flags(known, body, &mut words, &mut out) {
                out.errors
                    .push(unknown_flag(&written, name, known, klog, binary));
            }
            continue;
        };
        if flag.kind == Kind::Value {
            match inline.or_else(|| words.next()) {
                None => out.errors.push(format!(
                    "a value is required for '--{name}' but none was supplied"
                )),
                Some(value) if !ignored => out.flags.push(format!("--{name}={value}")),
                Some(_) => {}
            }
            continue;
        }
        if flag.kind == Kind::Exit {
            out.exits.push(written.clone());
        }
        if inline.is_none() && flag.kind == Kind::Bool {
            bare_bool = Some((written, name));
        }
        if !ignored {
            out.flags.push(match inline {
                Some(v) => format!("--{name}={v}"),
                None => format!("--{name}"),
            });
        }
    }
    out
}

/// Reads a single-dash word (`body`, without the dash) as a short flag: `-r value`, `-r=value`,
/// `-rvalue`; `-v`, `-vvv` count, and `-v N`, `-vN`, `-v=N` are the long `--v=N`, as pflag reads
/// klog's `-v` (clap alone would count one `-v` and leave `N` as a stray word). False when it is
/// not a known short flag.
fn short_flags<'w>(
    known: &[Flag],
    body: &str,
    words: &mut std::iter::Peekable<impl Iterator<Item = &'w str>>,
    out: &mut Parsed,
) -> bool {
    let mut chars = body.chars();
    let Some(c) = chars.next() else {
        return false;
    };
    let rest = chars.as_str();
    let Some(flag) = known.iter().find(|f| f.short == Some(c)) else {
        return false;
    };
    let spelled = |flag: &Flag| match &flag.long {
        Some(long) => format!("--{long}"),
        None => format!("-{c}"),
    };
    match flag.kind {
        Kind::Value => {
            let value = match rest.strip_prefix('=') {
                Some(v) => Some(v),
                None if !rest.is_empty() => Some(rest),
                None => words.next(),
            };
            match value {
                Some(value) => out.flags.push(format!("{}={value}", spelled(flag))),
                None => out.errors.push(format!(
                    "a value is required for '-{c}' but none was supplied"
                )),
            }
            true
        }
        Kind::Count => {
            let mut name = [0; 4];
            let name: &str = c.encode_utf8(&mut name);
            let level_flag = known
                .iter()
                .find(|f| f.kind == Kind::Value && f.long.as_deref() == Some(name));
            let level = match rest.strip_prefix('=') {
                Some(v) => Some(v),
                None if is_level(rest) => Some(rest),
                None if rest.is_empty() => words.next_if(|w| is_level(w)),
                None => None,
            };
            match (level_flag, level) {
                (Some(long), Some(level)) => {
                    out.flags.push(format!("{}={level}", spelled(long)));
                    true
                }
                _ if rest.chars().all(|r| r == c) => {
                    out.flags.push(format!("-{body}"));
                    true
                }
                _ => false,
            }
        }
        Kind::Bool | Kind::Exit => {
            let spelling = match rest.strip_prefix('=') {
                Some(v) => format!("{}={v}", spelled(flag)),
                None if rest.is_empty() => spelled(flag),
                None => return false,
            };
            if flag.kind == Kind::Exit {
                out.exits.push(format!("-{c}"));
            }
            out.flags.push(spelling);
            true
        }
    }
}

/// A verbosity level: digits only.
fn is_level(word: &str) -> bool {
    !word.is_empty() && word.bytes().all(|b| b.is_ascii_digit())
}

/// A Go `strconv.ParseBool` word, or one of clap's boolish spellings.
fn is_go_bool(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "true" | "false" | "t" | "f" | "1" | "0" | "yes" | "no" | "y" | "n" | "on" | "off"
    )
}

/// The refusal of an unknown flag, naming the closest known one when there is one.
fn unknown_flag(written: &str, name: &str, known: &[Flag], klog: &[Flag], binary: &str) -> String {
    if KLOG_ANY.iter().any(|f| f.long.as_deref() == Some(name)) {
        return format!(
            "unknown flag {written} (upstream's {binary} does not take this klog flag either)"
        );
    }
    match closest(name, known.iter().chain(klog)) {
        Some(best) => format!("unknown flag {written} (did you mean --{best}?)"),
        None => format!("unknown flag {written}"),
    }
}

/// The long name nearest to `name` by edit distance, if near enough to be a typo of it or it
/// starts with `name` (a cut-off name).
fn closest<'f>(name: &str, flags: impl Iterator<Item = &'f Flag>) -> Option<&'f str> {
    let lower = name.to_ascii_lowercase();
    flags
        .filter_map(|f| f.long.as_deref())
        .map(|long| {
            let long_lower = long.to_ascii_lowercase();
            let cut_off = lower.len() >= 3 && long_lower.starts_with(&lower);
            (edit_distance(&lower, &long_lower), cut_off, long)
        })
        .filter(|(d, cut_off, long)| {
            let len = long.chars().count();
            *cut_off || (*d < len && (*d <= 2 || d * 4 <= len))
        })
        .map(|(d, _, long)| (d, long))
        .min_by_key(|(d, _)| *d)
        .map(|(_, long)| long)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    fn ecr(args: &[&str]) -> Parsed {
        parse(&ECR.known(), ECR.klog, ECR.binary, args)
    }

    fn gcr(args: &[&str]) -> Parsed {
        parse(&GCR.known(), GCR.klog, GCR.binary, args)
    }

    #[test]
    fn known_flags_in_every_go_spelling_become_one_clap_spelling() {
        let parsed = ecr(&[
            "get-credentials",
            "--strict-hosts",
            "-registry-mirror",
            "a:b",
            "--registry-mirror=c:d",
            "-r",
            "e:f",
            "-rg:h",
            "-r=i:j",
            "-deadline=3s",
            "--cache-jitter",
            "-5",
            "--token-cache=false",
        ]);
        assert_eq!(parsed.errors, Vec::<String>::new());
        assert_eq!(
            parsed.flags,
            strings(&[
                "--strict-hosts",
                "--registry-mirror=a:b",
                "--registry-mirror=c:d",
                "--registry-mirror=e:f",
                "--registry-mirror=g:h",
                "--registry-mirror=i:j",
                "--deadline=3s",
                "--cache-jitter=-5",
                "--token-cache=false",
            ])
        );
        assert_eq!(parsed.positionals, strings(&["get-credentials"]));
    }

    #[test]
    fn a_boolean_flag_never_takes_the_next_word() {
        let parsed = ecr(&["--strict-hosts", "get-credentials", "--token-cache", "x"]);
        assert_eq!(parsed.flags, strings(&["--strict-hosts", "--token-cache"]));
        assert_eq!(parsed.positionals, strings(&["get-credentials", "x"]));
        assert_eq!(parsed.errors, Vec::<String>::new());
        assert_eq!(
            ecr(&["--strict-hosts", "false"]).errors,
            strings(&[
                "unexpected argument \"false\" after --strict-hosts: a boolean flag takes its value as --strict-hosts=false"
            ])
        );
        assert_eq!(
            gcr(&["-logtostderr", "true"]).errors,
            strings(&[
                "unexpected argument \"true\" after -logtostderr: a boolean flag takes its value as --logtostderr=true"
            ])
        );
    }

    #[test]
    fn verbosity_in_every_spelling() {
        for args in [
            &["-v", "4"][..],
            &["-v=4"],
            &["--v=4"],
            &["--v", "4"],
            &["-v4"],
            &["-v", "4", "get-credentials"],
        ] {
            let parsed = ecr(args);
            assert_eq!(parsed.flags, strings(&["--v=4"]), "{args:?}");
            assert_eq!(parsed.errors, Vec::<String>::new(), "{args:?}");
        }
        assert_eq!(ecr(&["-vvv"]).flags, strings(&["-vvv"]));
        let parsed = ecr(&["-v", "get-credentials"]);
        assert_eq!(parsed.flags, strings(&["-v"]));
        assert_eq!(parsed.positionals, strings(&["get-credentials"]));
        // A bad level is clap's to refuse, with its message.
        assert_eq!(ecr(&["-v=x"]).flags, strings(&["--v=x"]));
        assert_eq!(ecr(&["--", "-v", "4"]).positionals, strings(&["-v", "4"]));
    }

    #[test]
    fn klog_flags_of_the_upstream_are_taken_and_left_out() {
        let parsed = gcr(&[
            "get-credentials",
            "--logtostderr",
            "-logtostderr=false",
            "--log_dir=/x",
            "--log_dir",
            "/y",
            "-log_file",
            "/z",
            "--skip_headers=true",
            "--vmodule=a=2",
            "--v=3",
        ]);
        assert_eq!(parsed.errors, Vec::<String>::new());
        assert_eq!(parsed.flags, strings(&["--v=3"]));
        assert_eq!(parsed.positionals, strings(&["get-credentials"]));
        // ECR's upstream takes none of them.
        assert_eq!(
            ecr(&["--logtostderr"]).errors,
            strings(&[
                "unknown flag --logtostderr (upstream's ecr-credential-provider does not take this klog flag either)"
            ])
        );
    }

    #[test]
    fn unknown_flags_are_named_with_the_closest_known_one() {
        let errors = |args: &[&str]| ecr(args).errors;
        assert_eq!(
            errors(&["--strict-host", "get-credentials"]),
            strings(&["unknown flag --strict-host (did you mean --strict-hosts?)"])
        );
        assert_eq!(
            errors(&["--registy-mirror=x:y"]),
            strings(&["unknown flag --registy-mirror (did you mean --registry-mirror?)"])
        );
        assert_eq!(errors(&["--bogus"]), strings(&["unknown flag --bogus"]));
        assert_eq!(
            errors(&["--assume-role-ext=x"]),
            strings(&["unknown flag --assume-role-ext (did you mean --assume-role-external-id?)"])
        );
        assert_eq!(errors(&["-x"]), strings(&["unknown flag -x"]));
        assert_eq!(
            errors(&["-strict-host=1"]),
            strings(&["unknown flag -strict-host (did you mean --strict-hosts?)"])
        );
        assert_eq!(
            errors(&["-vmodule=x"]),
            strings(&[
                "unknown flag -vmodule (upstream's ecr-credential-provider does not take this klog flag either)"
            ])
        );
        assert_eq!(
            gcr(&["--log-dir=/x"]).errors,
            strings(&["unknown flag --log-dir (did you mean --log_dir?)"])
        );
        assert_eq!(
            gcr(&["--authflow=gcr"]).errors,
            strings(&["unknown flag --authflow (did you mean --authFlow?)"])
        );
        assert_eq!(
            errors(&["---strict-hosts"]),
            strings(&["unknown flag ---strict-hosts (did you mean --strict-hosts?)"])
        );
        assert_eq!(
            errors(&["--deadline"]),
            strings(&["a value is required for '--deadline' but none was supplied"])
        );
        assert_eq!(
            errors(&["-r"]),
            strings(&["a value is required for '-r' but none was supplied"])
        );
    }

    #[test]
    fn the_checker_gets_every_problem() {
        let args = strings(&["get-credentials", "--strict-host", "--bogus=1", "--help"]);
        assert_eq!(
            ECR.problems(&args),
            strings(&[
                "unknown flag --strict-host (did you mean --strict-hosts?)",
                "unknown flag --bogus",
                "--help makes the plugin print text and exit 0 instead of answering",
            ])
        );
        assert_eq!(
            ECR.problems(&strings(&["get-credentials", "strict-hosts"])),
            strings(&[
                "unexpected argument \"strict-hosts\": this provider takes no arguments but get-credentials"
            ])
        );
        assert_eq!(
            ACR.problems(&strings(&["/etc/kubernetes/azure.json", "-v", "4"])),
            Vec::<String>::new()
        );
        assert_eq!(
            ACR.problems(&strings(&["get-credentials", "/etc/kubernetes/azure.json"])),
            strings(&[
                "expected exactly one argument (config file); got arguments: [\"get-credentials\", \"/etc/kubernetes/azure.json\"]"
            ])
        );
        assert!(ACR.problems(&[])[0].starts_with("config file is not specified"));
        assert_eq!(
            STATIC.problems(&strings(&[
                "--registry=r",
                "--logtostderr",
                "--log-flush-frequency=5s"
            ])),
            Vec::<String>::new()
        );
    }

    #[test]
    fn binaries_are_found_by_name() {
        assert_eq!(
            for_binary("ecr-credential-provider").map(|p| p.binary),
            Some("ecr-credential-provider")
        );
        assert_eq!(
            for_binary("ACR-credential-provider.EXE").map(|p| p.binary),
            Some("acr-credential-provider")
        );
        assert!(for_binary("auth-provider-gcp").is_none());
    }

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("strict-host", "strict-hosts"), 1);
        assert_eq!(edit_distance("registy-mirror", "registry-mirror"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
