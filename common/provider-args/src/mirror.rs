//! `--registry-mirror SRC:DST[,SRC:DST]`: the flag with which a provider answers images on a
//! mirror host (SRC, e.g. `docker.io` redirected by containerd's `hosts.toml`) with a token for
//! the cloud registry behind it (DST).
//!
//! One parser for every provider that takes the flag and for the checker, which warns when a
//! source is not covered by `matchImages`: the syntax cannot drift between them. What counts as a
//! valid destination is the provider's business (an ACR login server, an ECR private registry).
//!
//! Syntax, as upstream's ACR flag: entries separated by commas, spaces ignored, `src:dst` with
//! exactly one colon, or `src=dst` when the source has a port (`reg.local:5000=dst`). Sources are
//! compared with the image's registry (host and port, as the kubelet's `Registry` key) without
//! regard to case; a later entry for the same source wins.

/// One `--registry-mirror` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    /// The source registry (host, optional port), lower-cased.
    pub source: String,
    /// The registry it maps to, lower-cased.
    pub target: String,
}

/// Parses every `--registry-mirror` value. Returns the mirrors and a message per malformed entry;
/// whether such an entry is skipped with a warning (upstream's ACR behaviour) or refused is the
/// caller's choice.
pub fn parse_mirrors(values: &[String]) -> (Vec<Mirror>, Vec<String>) {
    let mut mirrors: Vec<Mirror> = Vec::new();
    let mut warnings = Vec::new();
    for value in values {
        // Upstream strips every space, so "a: b, c:d" works.
        let compact: String = value.chars().filter(|c| !c.is_whitespace()).collect();
        for entry in compact.split(',').filter(|e| !e.is_empty()) {
            match parse_entry(entry) {
                Some(mirror) => {
                    mirrors.retain(|m| m.source != mirror.source);
                    mirrors.push(mirror);
                }
                None => warnings.push(format!(
                    "ignoring --registry-mirror entry {entry:?}: expected <source-host>:<destination-registry> (or <source-host:port>=<destination-registry>)"
                )),
            }
        }
    }
    (mirrors, warnings)
}

/// One `src:dst` or `src=dst` entry (no commas, no spaces), or `None` when malformed.
pub fn parse_entry(entry: &str) -> Option<Mirror> {
    if entry.is_empty() || entry.contains(',') || entry.chars().any(char::is_whitespace) {
        return None;
    }
    // `src=dst` allows a port in the source; `src:dst` needs exactly one colon.
    let (source, target) = match entry.split_once('=') {
        Some(pair) => pair,
        None if entry.matches(':').count() == 1 => entry.split_once(':')?,
        None => return None,
    };
    if source.is_empty() || target.is_empty() {
        return None;
    }
    Some(Mirror {
        source: source.to_ascii_lowercase(),
        target: target.to_ascii_lowercase(),
    })
}

/// The mirror whose source is `registry` (the image's `host[:port]` as written), if any.
pub fn find<'a>(mirrors: &'a [Mirror], registry: &str) -> Option<&'a Mirror> {
    mirrors
        .iter()
        .find(|m| m.source.eq_ignore_ascii_case(registry))
}

/// The `--registry-mirror` values in a provider's `args` (`--registry-mirror=V`,
/// `--registry-mirror V`, `-r V`, `-r=V`), for tools that read a kubelet config.
pub fn values_in_args(args: &[String]) -> Vec<String> {
    let mut values = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if let Some(v) = arg
            .strip_prefix("--registry-mirror=")
            .or_else(|| arg.strip_prefix("-r="))
        {
            values.push(v.to_owned());
        } else if (arg == "--registry-mirror" || arg == "-r")
            && let Some(v) = iter.next()
        {
            values.push(v.clone());
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str, d: &str) -> Mirror {
        Mirror {
            source: s.into(),
            target: d.into(),
        }
    }

    /// docs/providers/acr.md “Test vectors”: `TestProcessMirrorMapping`, plus the extensions.
    #[test]
    fn upstream_mirror_parsing_vectors() {
        assert_eq!(parse_mirrors(&["".into()]), (vec![], vec![]));
        assert_eq!(
            parse_mirrors(&["aaa:bbb,ccc:ddd".into()]).0,
            vec![m("aaa", "bbb"), m("ccc", "ddd")]
        );
        assert_eq!(
            parse_mirrors(&["aaa: bbb, ccc:ddd".into()]).0,
            vec![m("aaa", "bbb"), m("ccc", "ddd")]
        );
        let (mirrors, warnings) = parse_mirrors(&[
            "Reg.Local:5000=abc.azurecr.io".into(),
            "aaa:bbb,aaa:ccc,a:b:c,:x,y:".into(),
        ]);
        assert_eq!(
            mirrors,
            vec![m("reg.local:5000", "abc.azurecr.io"), m("aaa", "ccc")]
        );
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("\"a:b:c\""), "{warnings:?}");
    }

    #[test]
    fn find_is_exact_and_case_insensitive() {
        let mirrors = vec![m("docker.io", "x"), m("reg.local:5000", "y")];
        assert_eq!(
            find(&mirrors, "Docker.IO").map(|m| m.target.as_str()),
            Some("x")
        );
        assert_eq!(
            find(&mirrors, "reg.local:5000").map(|m| m.target.as_str()),
            Some("y")
        );
        assert!(find(&mirrors, "reg.local").is_none());
        assert!(find(&mirrors, "docker.io.evil.example").is_none());
    }

    #[test]
    fn values_are_found_in_every_spelling() {
        let args: Vec<String> = [
            "get-credentials",
            "--registry-mirror=a:b",
            "--registry-mirror",
            "c:d",
            "-r",
            "e:f",
            "-r=g:h",
            "--strict-hosts",
            "-r",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        assert_eq!(values_in_args(&args), vec!["a:b", "c:d", "e:f", "g:h"]);
    }
}
