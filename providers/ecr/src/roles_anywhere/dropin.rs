//! The drop-in: when the AWS config profile the provider would use (`AWS_CONFIG_FILE`, default
//! `~/.aws/config`; profile `AWS_PROFILE`, default `default`) has a `credential_process` that
//! runs AWS's `aws_signing_helper credential-process` (any directory), its arguments are read
//! and the exchange is made here, so the node's config works with the helper absent. Any other
//! `credential_process` stays the SDK's. A helper flag this provider cannot honour (PKCS#11,
//! TPM, certificate stores, encrypted keys, no TLS verification) is refused by name, never
//! ignored.

use std::path::PathBuf;

use super::{Names, Raw, RolesAnywhere, Source};

/// The helper's binary name.
const HELPER: &str = "aws_signing_helper";

/// How the helper's flags are named in errors.
const NAMES: Names = Names {
    certificate: "--certificate",
    private_key: "--private-key",
    trust_anchor: "--trust-anchor-arn",
    profile: "--profile-arn",
    role: "--role-arn",
    duration: "--session-duration",
};

/// Helper flags that need something this provider does not do, and what that is.
const REFUSED: &[(&str, &str)] = &[
    ("pkcs11-lib", "PKCS#11 keys"),
    ("reuse-pin", "PKCS#11 keys"),
    ("tpm-key-password", "TPM keys"),
    ("no-tpm-key-password", "TPM keys"),
    ("cert-selector", "certificate stores"),
    ("system-store-name", "certificate stores"),
    ("use-latest-expiring-certificate", "certificate stores"),
    ("pkcs8-password", "encrypted keys"),
    ("no-verify-ssl", "calls without TLS verification"),
];

/// The helper's value flags this provider reads.
const VALUE_FLAGS: &[&str] = &[
    "certificate",
    "private-key",
    "intermediates",
    "trust-anchor-arn",
    "profile-arn",
    "role-arn",
    "session-duration",
    "region",
    "endpoint",
    "role-session-name",
];

/// The helper's switches that change nothing here: proxies always follow the environment's
/// rules, and debug output is the helper's own.
const HARMLESS_SWITCHES: &[&str] = &["with-proxy", "debug"];

/// The drop-in's configuration, when the profile in force runs the signing helper.
pub fn from_aws_config() -> Result<Option<RolesAnywhere>, String> {
    // Static keys in the environment come before any profile in the SDK's chain.
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    if set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY") {
        return Ok(None);
    }
    let Some(file) = config_file() else {
        return Ok(None);
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) => {
            tracing::debug!(file = %file.display(), "AWS config not read: {e}");
            return Ok(None);
        }
    };
    let profile = std::env::var("AWS_PROFILE")
        .ok()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "default".to_owned());
    let Some(process) = credential_process(&text, &profile) else {
        return Ok(None);
    };
    let source = Source::Profile {
        file: file.clone(),
        profile: profile.clone(),
    };
    let words = match shell_words(&process) {
        Ok(words) => words,
        Err(e) if process.contains(HELPER) => {
            return Err(format!(
                "the {source} runs {HELPER} in a form this provider cannot read ({e}); write it as `<path>/{HELPER} credential-process --certificate … --private-key … --trust-anchor-arn … --profile-arn … --role-arn …`"
            ));
        }
        Err(_) => return Ok(None),
    };
    let Some(program) = words.first() else {
        return Ok(None);
    };
    let base = program.rsplit(['/', '\\']).next().unwrap_or(program);
    if base != HELPER && base != "aws_signing_helper.exe" {
        return Ok(None);
    }
    let raw = helper_args(&words[1..]).map_err(|e| format!("the {source} {e}"))?;
    RolesAnywhere::check(raw, &NAMES, source).map(Some)
}

/// The AWS config file: `AWS_CONFIG_FILE` (a leading `~/` is the home directory), else
/// `<home>/.aws/config`.
fn config_file() -> Option<PathBuf> {
    let home = || {
        std::env::var_os("HOME")
            .or_else(|| std::env::var_os("USERPROFILE"))
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
    };
    match std::env::var("AWS_CONFIG_FILE") {
        Ok(path) if !path.trim().is_empty() => match path.strip_prefix("~/") {
            Some(rest) => home().map(|h| h.join(rest)),
            None => Some(PathBuf::from(path)),
        },
        _ => home().map(|h| h.join(".aws").join("config")),
    }
}

/// The `credential_process` of `profile` in an AWS config file's text: section `[profile
/// <name>]` (or `[default]` for `default`), `key = value` lines, `#` and `;` comments; indented
/// lines continue a key and are not read.
fn credential_process(text: &str, profile: &str) -> Option<String> {
    let mut in_profile = false;
    let mut found = None;
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(section) = line.strip_prefix('[') {
            let name = section.split(']').next().unwrap_or("").trim();
            // `[profile <name>]`, or a plain `[<name>]`, which only `default` may use.
            let (named, plain) = match name.strip_prefix("profile") {
                Some(rest) if rest.starts_with([' ', '\t']) => (rest.trim(), false),
                _ => (name, true),
            };
            in_profile = named == profile && (!plain || profile == "default");
            continue;
        }
        if !in_profile {
            continue;
        }
        if let Some((key, value)) = line.split_once('=')
            && key.trim() == "credential_process"
        {
            // A comment after whitespace ends the value.
            let value = value
                .split(" #")
                .next()
                .and_then(|v| v.split(" ;").next())
                .unwrap_or("")
                .trim();
            found = Some(value.to_owned());
        }
    }
    found.filter(|v| !v.is_empty())
}

/// Splits a command line as a POSIX shell would for plain words: whitespace separates,
/// `'…'` and `"…"` quote (`\` escapes `"`, `\`, `$` and a backquote inside double quotes), `\`
/// escapes outside quotes. Shell syntax that is more than words (`$`, backquotes, `;`, `|`, `&`,
/// redirections, parentheses, globs) is an error: the helper would run under a shell, and its
/// meaning is not ours to guess.
fn shell_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("an unterminated single quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("an unterminated double quote".into()),
                        },
                        Some(c @ ('$' | '`')) => {
                            return Err(format!("shell expansion ({c}) inside double quotes"));
                        }
                        Some(c) => word.push(c),
                        None => return Err("an unterminated double quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err("a trailing backslash".into()),
                }
            }
            '$' | '`' | ';' | '|' | '&' | '<' | '>' | '(' | ')' | '*' | '?' | '[' | '{' | '~' => {
                return Err(format!("shell syntax {c:?}"));
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The helper's `credential-process` arguments, as its flag parser reads them (`--flag value`,
/// `--flag=value`, switches alone or `=true`/`=false`).
fn helper_args(args: &[String]) -> Result<Raw, String> {
    let mut raw = Raw::default();
    let mut subcommand = None;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(flag) = arg.strip_prefix("--") else {
            if arg.starts_with('-') && arg.len() > 1 {
                return Err(format!(
                    "passes {arg} to {HELPER}, which this provider does not read (the helper's flags take two dashes)"
                ));
            }
            if subcommand.is_some() {
                return Err(format!("passes a stray argument {arg:?} to {HELPER}"));
            }
            subcommand = Some(arg.clone());
            continue;
        };
        let (name, inline) = match flag.split_once('=') {
            Some((name, value)) => (name, Some(value.to_owned())),
            None => (flag, None),
        };
        if let Some((_, what)) = REFUSED.iter().find(|(n, _)| *n == name) {
            return Err(format!(
                "passes --{name} to {HELPER}: {what} are not supported natively; {}",
                super::key::SUPPORTED
            ));
        }
        if HARMLESS_SWITCHES.contains(&name) {
            continue;
        }
        if !VALUE_FLAGS.contains(&name) {
            return Err(format!(
                "passes --{name} to {HELPER}, a flag this provider does not read natively; remove it, or configure the --roles-anywhere-* flags instead"
            ));
        }
        let value = match inline {
            Some(value) => value,
            None => {
                let value = args
                    .get(i)
                    .ok_or_else(|| format!("passes --{name} to {HELPER} without a value"))?;
                i += 1;
                value.clone()
            }
        };
        let path = || Some(PathBuf::from(&value));
        match name {
            "certificate" => raw.certificate = path(),
            "private-key" => raw.private_key = path(),
            "intermediates" => raw.intermediates = path(),
            "trust-anchor-arn" => raw.trust_anchor = Some(value),
            "profile-arn" => raw.profile = Some(value),
            "role-arn" => raw.role = Some(value),
            "session-duration" => raw.duration = Some(value),
            "region" => raw.region = Some(value),
            "endpoint" => raw.endpoint = Some(value),
            _ => raw.role_session_name = Some(value),
        }
    }
    match subcommand.as_deref() {
        Some("credential-process") => Ok(raw),
        Some(other) => Err(format!(
            "runs {HELPER} {other}, not credential-process; only credential-process is read natively"
        )),
        None => Err(format!(
            "runs {HELPER} without the credential-process command"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        shell_words(line).unwrap()
    }

    #[test]
    fn command_lines_split_as_a_shell_would_for_plain_words() {
        assert_eq!(words("a  b\tc"), ["a", "b", "c"]);
        assert_eq!(
            words(r#"'/opt/my dir/x' "a \"b\" \$c" d\ e"#),
            ["/opt/my dir/x", "a \"b\" $c", "d e"]
        );
        assert_eq!(words("''"), [""]);
        for bad in [
            "a 'b", "a \"b", "a\\", "a; b", "a | b", "a $HOME", "a `x`", "a > f", "a \"$x\"",
        ] {
            assert!(shell_words(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_profile_in_force_is_found() {
        let text = "[default]\nregion = us-west-2\ncredential_process = /a/aws_signing_helper credential-process  # comment\n\n[profile hybrid]\ncredential_process=other\n  nested = x\n[hybrid]\ncredential_process = plain-section\n[profilex]\ncredential_process = glued\n";
        assert_eq!(
            credential_process(text, "default").as_deref(),
            Some("/a/aws_signing_helper credential-process")
        );
        assert_eq!(credential_process(text, "hybrid").as_deref(), Some("other"));
        assert_eq!(credential_process(text, "profilex"), None);
        assert_eq!(credential_process(text, "missing"), None);
        assert_eq!(
            credential_process("[profile default]\ncredential_process = x\n", "default").as_deref(),
            Some("x")
        );
    }

    #[test]
    fn helper_arguments_are_read_as_its_flag_parser_reads_them() {
        let args: Vec<String> = words(
            "credential-process --certificate /c --private-key=/k --trust-anchor-arn t --profile-arn p --role-arn r --role-session-name node-1 --with-proxy --debug=false --session-duration 900 --intermediates /i",
        );
        let raw = helper_args(&args).unwrap();
        assert_eq!(raw.certificate, Some(PathBuf::from("/c")));
        assert_eq!(raw.private_key, Some(PathBuf::from("/k")));
        assert_eq!(raw.intermediates, Some(PathBuf::from("/i")));
        assert_eq!(raw.role_session_name.as_deref(), Some("node-1"));
        assert_eq!(raw.duration.as_deref(), Some("900"));
        for (line, needle) in [
            (
                "credential-process --pkcs11-lib /usr/lib/p11.so",
                "--pkcs11-lib",
            ),
            (
                "credential-process --tpm-key-password x",
                "--tpm-key-password",
            ),
            ("credential-process --cert-selector x", "--cert-selector"),
            (
                "credential-process --use-latest-expiring-certificate",
                "--use-latest-expiring-certificate",
            ),
            ("credential-process --no-verify-ssl", "--no-verify-ssl"),
            ("credential-process --frobnicate", "--frobnicate"),
            ("credential-process -certificate x", "-certificate"),
            ("serve --certificate x", "serve"),
            ("--certificate x", "without the credential-process"),
            ("credential-process --role-arn", "without a value"),
        ] {
            let e = helper_args(&words(line)).unwrap_err();
            assert!(e.contains(needle), "{line}: {e}");
        }
    }
}
