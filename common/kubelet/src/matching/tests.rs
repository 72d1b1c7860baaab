//! The kubelet's matching vectors and the traps they document (docs/kubelet-contract.md).

use super::*;

/// Short name of an outcome's variant, so tables can state the expected reason.
fn kind(outcome: &MatchOutcome) -> &'static str {
    match outcome {
        MatchOutcome::Match => "match",
        MatchOutcome::Unparsable { .. } => "unparsable",
        MatchOutcome::PortMismatch { .. } => "port",
        MatchOutcome::LabelCountMismatch { .. } => "labels",
        MatchOutcome::PathPrefixMismatch { .. } => "path",
        MatchOutcome::LabelMismatch { .. } => "label",
        MatchOutcome::BadGlob { .. } => "badglob",
    }
}

fn unparsable(which: Side, reason: &str) -> MatchOutcome {
    MatchOutcome::Unparsable {
        which,
        reason: reason.to_owned(),
    }
}

// docs/kubelet-contract.md “Test vectors”: keyring_test.go TestUrlsMatch.
#[test]
fn table_a_urls_match() {
    let rows: &[(u32, &str, &str, &str)] = &[
        (1, "*.kubernetes.io", "prefix.kubernetes.io", "match"),
        (2, "prefix.*.io", "prefix.kubernetes.io", "match"),
        (3, "prefix.kubernetes.*", "prefix.kubernetes.io", "match"),
        (
            4,
            "*-good.kubernetes.io",
            "prefix-good.kubernetes.io",
            "match",
        ),
        (
            5,
            "*.kubernetes.io/blah",
            "prefix.kubernetes.io/blah",
            "match",
        ),
        (
            6,
            "prefix.*.io/foo",
            "prefix.kubernetes.io/foo/bar",
            "match",
        ),
        (
            7,
            "*.kubernetes.io:1111/blah",
            "prefix.kubernetes.io:1111/blah",
            "match",
        ),
        (
            8,
            "prefix.*.io:1111/foo",
            "prefix.kubernetes.io:1111/foo/bar",
            "match",
        ),
        (9, "*.kubernetes.io", "kubernetes.io", "labels"),
        (10, "*.*.kubernetes.io", "prefix.kubernetes.io", "labels"),
        (11, "*.*.kubernetes.io", "kubernetes.io", "labels"),
        (12, "kubernetes.io", "kubernetes.com", "label"),
        (13, "k*.io", "quay.io", "label"),
        (
            14,
            "*.kubernetes.io:1234/blah",
            "prefix.kubernetes.io:1111/blah",
            "port",
        ),
        (
            15,
            "prefix.*.io/foo",
            "prefix.kubernetes.io:1111/foo/bar",
            "port",
        ),
    ];
    for &(row, pattern, target, want) in rows {
        let outcome = explain(pattern, target);
        assert_eq!(kind(&outcome), want, "row {row}: {outcome:?}");
        assert_eq!(urls_match(pattern, target), want == "match", "row {row}");
    }
}

// docs/kubelet-contract.md “Test vectors”: plugin_test.go, matchImages entries that all match.
#[test]
fn table_b_match_images() {
    let rows: &[(u32, &str, &str)] = &[
        (16, "test.registry.io", "test.registry.io/foo/bar"),
        (17, "test.registry.io/foo/bar", "test.registry.io/foo/bar"),
        (18, "test.registry.io", "test.registry.io"),
        (19, "*.registry.io:8080", "test.registry.io:8080/foo"),
        (20, "*.*.registry.io", "foo.bar.registry.io/foo/bar"),
        (21, "*.registry.io", "test.registry.io"),
        (22, "*.registry.io", "test.registry.io/foo/bar"),
        (23, "test2.registry.io", "test2.registry.io/k3xq9"),
    ];
    for &(row, pattern, image) in rows {
        assert!(
            match_image(pattern, image),
            "row {row}: {:?}",
            explain(pattern, image)
        );
    }
}

// docs/kubelet-contract.md “Test vectors”: keyring_test.go TestDockerKeyringForGlob
// (image = target + /foo/bar).
#[test]
fn table_c_keyring_hits() {
    let rows: &[(u32, &str, &str)] = &[
        (24, "https://hello.kubernetes.io", "hello.kubernetes.io"),
        (25, "https://*.docker.io", "prefix.docker.io"),
        (26, "https://prefix.*.io", "prefix.docker.io"),
        (27, "https://prefix.docker.*", "prefix.docker.io"),
        (28, "https://*.docker.io/path", "prefix.docker.io/path"),
        (
            29,
            "https://prefix.*.io/path",
            "prefix.docker.io/path/subpath",
        ),
        (30, "https://prefix.docker.*/path", "prefix.docker.io/path"),
        (31, "https://*.docker.io:8888", "prefix.docker.io:8888"),
        (32, "https://prefix.*.io:8888", "prefix.docker.io:8888"),
        (33, "https://prefix.docker.*:8888", "prefix.docker.io:8888"),
        (
            34,
            "https://*.docker.io/path:1111",
            "prefix.docker.io/path:1111",
        ),
        (35, "https://*.docker.io/v1/", "prefix.docker.io/path:1111"),
        (36, "https://*.docker.io/v2/", "prefix.docker.io/path:1111"),
        (
            37,
            "https://prefix.docker.*/path:1111",
            "prefix.docker.io/path:1111",
        ),
        (38, "prefix.docker.io:1111", "prefix.docker.io:1111/path"),
        (39, "*.docker.io:1111", "prefix.docker.io:1111/path"),
    ];
    for &(row, key, target) in rows {
        let image = format!("{target}/foo/bar");
        assert_eq!(keyring_lookup(&[key], &image), vec![key], "row {row}");
    }
}

// docs/kubelet-contract.md “Test vectors”: keyring_test.go TestKeyringMiss
// (image = target + /foo/bar).
#[test]
fn table_d_keyring_misses() {
    let rows: &[(u32, &str, &str)] = &[
        (40, "https://hello.kubernetes.io", "world.mesos.org/foo/bar"),
        (41, "https://*.docker.com", "prefix.docker.io"),
        (42, "https://suffix.*.io", "prefix.docker.io"),
        (43, "https://prefix.docker.c*", "prefix.docker.io"),
        (
            44,
            "https://prefix.*.io/path:1111",
            "prefix.docker.io/path/subpath:1111",
        ),
        (45, "suffix.*.io", "prefix.docker.io"),
    ];
    for &(row, key, target) in rows {
        let image = format!("{target}/foo/bar");
        assert!(keyring_lookup(&[key], &image).is_empty(), "row {row}");
    }
}

// docs/kubelet-contract.md “Test vectors”: TestDockerKeyringLookup and TestIssue3797.
#[test]
fn table_e_order_and_path_prefixes() {
    let grace = "bar.example.com/pong";
    let ada = "bar.example.com";
    let name = |key: &str| if key == grace { "grace" } else { "ada" };
    let rows: &[(u32, &str, &[&str])] = &[
        (46, "bar.example.com", &["ada"]),
        (47, "bar.example.com/pong", &["grace", "ada"]),
        (48, "bar.example.com/ping", &["ada"]),
        (49, "bar.example.com/pongz", &["grace", "ada"]),
        (50, "bar.example.com/pong/pang", &["grace", "ada"]),
        (51, "example.com", &[]),
        (52, "foo.example.com", &[]),
    ];
    for &(row, image, want) in rows {
        // Given shortest first: the order must come from the keyring's sort.
        let got: Vec<&str> = keyring_lookup(&[ada, grace], image)
            .into_iter()
            .map(name)
            .collect();
        assert_eq!(got, want, "row {row}");
    }
    for image in ["quay.io", "quay.io/foo", "quay.io/foo/bar"] {
        let rex = "https://quay.io/v1/";
        assert_eq!(keyring_lookup(&[rex], image), vec![rex], "row 53: {image}");
    }
}

// docs/kubelet-contract.md “Test vectors”: TestIsDefaultRegistryMatch.
#[test]
fn is_default_registry_match_vectors() {
    let rows: &[(&str, bool)] = &[
        ("foo/bar", true),
        ("docker.io/foo/bar", true),
        ("index.docker.io/foo/bar", true),
        ("foo", true),
        ("", false),
        ("registry.tld/foo/bar", false),
        ("registry:5000/foo/bar", false),
        ("myhostdocker.io/foo/bar", false),
    ];
    for &(image, want) in rows {
        assert_eq!(is_default_registry_match(image), want, "{image:?}");
    }
}

// docs/kubelet-contract.md “Matching”: the traps.
#[test]
fn trap_path_glob_is_literal() {
    assert_eq!(
        explain("registry.io/*", "registry.io/foo"),
        MatchOutcome::PathPrefixMismatch {
            pattern_path: "/*".to_owned(),
            target_path: "/foo".to_owned(),
        }
    );
    assert!(!match_image("registry.io/*", "registry.io/foo/bar"));
    assert!(match_image("registry.io/*", "registry.io/*/bar"));
}

#[test]
fn trap_pattern_without_port_never_matches_image_with_port() {
    for pattern in ["registry.io", "*.io", "registry.io/team"] {
        assert_eq!(
            explain(pattern, "registry.io:5000/team/app"),
            MatchOutcome::PortMismatch {
                pattern_port: String::new(),
                target_port: "5000".to_owned(),
            },
            "{pattern}"
        );
    }
}

#[test]
fn trap_scheme_in_match_images_never_matches() {
    // matchImages: the kubelet adds https:// regardless, so the scheme ends up in the host.
    assert_eq!(
        explain("https://registry.io", "registry.io/app"),
        MatchOutcome::LabelCountMismatch {
            pattern_labels: 1,
            target_labels: 2,
        }
    );
    assert_eq!(
        explain("https://localhost", "localhost/app"),
        MatchOutcome::PathPrefixMismatch {
            pattern_path: "//localhost".to_owned(),
            target_path: "/app".to_owned(),
        }
    );
    assert!(!match_image("http://registry.io", "registry.io"));
    // auth keys, by contrast, lose their scheme in the keyring.
    let key = "https://registry.io";
    assert_eq!(keyring_lookup(&[key], "registry.io/app"), vec![key]);
}

#[test]
fn trap_question_mark_ends_the_host() {
    assert_eq!(
        explain("k?s.io", "k8s.io"),
        MatchOutcome::LabelCountMismatch {
            pattern_labels: 1,
            target_labels: 2,
        }
    );
}

#[test]
fn explain_reports_each_reason() {
    assert_eq!(
        explain("*.example.com", "a.example.com"),
        MatchOutcome::Match
    );
    assert_eq!(
        explain("%in", "example.com"),
        unparsable(
            Side::Pattern,
            r#"parse "https://%in": invalid URL escape "%in""#
        )
    );
    assert_eq!(
        explain("example.com", "example.com/%"),
        unparsable(
            Side::Target,
            r#"parse "https://example.com/%": invalid URL escape "%""#
        )
    );
    assert_eq!(
        explain("*.example.com:1234", "a.example.com:1111"),
        MatchOutcome::PortMismatch {
            pattern_port: "1234".to_owned(),
            target_port: "1111".to_owned(),
        }
    );
    assert_eq!(
        explain("*.*.example.com", "example.com"),
        MatchOutcome::LabelCountMismatch {
            pattern_labels: 4,
            target_labels: 2,
        }
    );
    assert_eq!(
        explain("a.example.com/team", "a.example.com/other/app"),
        MatchOutcome::PathPrefixMismatch {
            pattern_path: "/team".to_owned(),
            target_path: "/other/app".to_owned(),
        }
    );
    assert_eq!(
        explain("a.*.com", "a.example.org"),
        MatchOutcome::LabelMismatch {
            index: 2,
            pattern_label: "com".to_owned(),
            target_label: "org".to_owned(),
        }
    );
    // Brackets only parse around an IPv6 literal; without a port the literal stays one
    // label, and splitting "[::1.2.3.4]" at dots leaves the unterminated class "[::1".
    assert_eq!(
        explain("[::1.2.3.4]", "[::1.2.3.4]"),
        MatchOutcome::BadGlob {
            pattern_label: "[::1".to_owned(),
        }
    );
}

#[test]
fn explain_checks_in_go_order() {
    // Port before label count, label count before path, path before labels.
    assert_eq!(kind(&explain("a.b:1", "a:2")), "port");
    assert_eq!(kind(&explain("a.b/x", "a/y")), "labels");
    assert_eq!(kind(&explain("x.io/a", "y.io/b")), "path");
    // The pattern is parsed first.
    let both_bad = explain("%zz", "%yy");
    assert_eq!(
        both_bad,
        unparsable(
            Side::Pattern,
            r#"parse "https://%zz": invalid URL escape "%zz""#
        )
    );
}

#[test]
fn display_is_a_short_sentence() {
    let rows: &[(&str, &str, &str)] = &[
        ("*.io", "a.io", "the pattern matches the image"),
        (
            "*.kubernetes.io:1234/blah",
            "prefix.kubernetes.io:1111/blah",
            "port 1234 in the pattern differs from port 1111 in the image",
        ),
        (
            "registry.io",
            "registry.io:5000/app",
            "the pattern has no port but the image has port 5000",
        ),
        (
            "registry.io:5000",
            "registry.io/app",
            "the pattern has port 5000 but the image has no port",
        ),
        (
            "*.io",
            "a.b.io",
            "the pattern host has 2 dot-separated labels but the image host has 3 (a `*` \
             never spans a dot)",
        ),
        (
            "a.io/*",
            "a.io/x",
            "the image path \"/x\" does not start with the pattern path \"/*\" (paths are \
             literal prefixes, not globs)",
        ),
        (
            "k*.io",
            "quay.io",
            "host label 1 of the pattern, \"k*\", does not match \"quay\" in the image",
        ),
        (
            "%in",
            "a.io",
            "the pattern is not a valid URL for the kubelet: parse \"https://%in\": invalid \
             URL escape \"%in\"",
        ),
        (
            "a.io",
            "a b",
            "the image is not a valid URL for the kubelet: parse \"https://a b\": invalid \
             character \" \" in host name",
        ),
        (
            "[::1.2.3.4]",
            "[::1.2.3.4]",
            "the pattern host label \"[::1\" is a malformed glob (syntax error in pattern), \
             which the kubelet treats as no match",
        ),
    ];
    for &(pattern, target, want) in rows {
        assert_eq!(explain(pattern, target).to_string(), want);
    }
}

#[test]
fn url_parsing_follows_go() {
    let rows: &[(&str, &str, &str)] = &[
        // Userinfo is dropped, but validated.
        ("user:pw@registry.io", "registry.io/app", "match"),
        ("a@b@registry.io", "registry.io/app", "match"),
        // Paths are compared after percent-decoding, hosts may escape non-ASCII bytes.
        ("registry.io/a%2Fb", "registry.io/a/b/c", "match"),
        ("registry.io/a/b", "registry.io/a%2fb", "match"),
        ("%C3%A9.io", "é.io", "match"),
        // Query and fragment are dropped.
        ("registry.io?x=1", "registry.io/app", "match"),
        ("registry.io#frag", "registry.io/app", "match"),
        // "host:" has an empty port, which equals no port.
        ("registry.io:", "registry.io/app", "match"),
        // Several colons: the last one must start a port, then SplitHostPort gives up
        // and the whole host is one label.
        ("a:1:2", "a:1:2", "match"),
        ("a:1:2", "a:1", "port"),
        // A bracketed IPv6 literal with a port becomes the label "::1".
        ("[::1]:5000", "[::1]:5000/app", "match"),
        ("[fe80::1%25en0]:5000", "[fe80::1%25en0]:5000", "match"),
        // Without a port, the literal "[::1]" is a one-character class.
        ("[::1]", "[::1]", "label"),
        // Matching is case-sensitive.
        ("Registry.io", "registry.io", "label"),
    ];
    for &(pattern, target, want) in rows {
        let outcome = explain(pattern, target);
        assert_eq!(kind(&outcome), want, "{pattern} vs {target}: {outcome:?}");
    }
}

#[test]
fn url_errors_use_go_wording() {
    let rows: &[(&str, &str)] = &[
        ("%", r#"parse "https://%": invalid URL escape "%""#),
        ("%4", r#"parse "https://%4": invalid URL escape "%4""#),
        (
            "%41.io",
            r#"parse "https://%41.io": invalid URL escape "%41""#,
        ),
        (
            "a b.io",
            r#"parse "https://a b.io": invalid character " " in host name"#,
        ),
        (
            "a\\b.io",
            r#"parse "https://a\\b.io": invalid character "\\" in host name"#,
        ),
        (
            "a\tb",
            r#"parse "https://a\tb": net/url: invalid control character in URL"#,
        ),
        (
            "us er@registry.io",
            r#"parse "https://us er@registry.io": net/url: invalid userinfo"#,
        ),
        (
            "u%zz@registry.io",
            r#"parse "https://u%zz@registry.io": invalid URL escape "%zz""#,
        ),
        (
            "registry.io#%zz",
            r#"parse "https://registry.io#%zz": invalid URL escape "%zz""#,
        ),
        (
            "a:b:c",
            r#"parse "https://a:b:c": invalid port ":c" after host"#,
        ),
        (
            "host:x/app",
            r#"parse "https://host:x/app": invalid port ":x" after host"#,
        ),
        ("[::1", r#"parse "https://[::1": missing ']' in host"#),
        (
            "[::1]x",
            r#"parse "https://[::1]x": invalid port "x" after host"#,
        ),
        (
            "[1.2.3.4]",
            r#"parse "https://[1.2.3.4]": invalid IP-literal"#,
        ),
        (
            "a[0-9].io",
            r#"parse "https://a[0-9].io": invalid IP-literal"#,
        ),
        (
            "[::g]",
            r#"parse "https://[::g]": invalid host: ParseAddr("::g"): each colon-separated field must have at least one digit (at "g")"#,
        ),
        (
            "[fe80::1%25%0a]",
            r#"parse "https://[fe80::1%25%0a]": invalid URL escape "%0a""#,
        ),
        (
            "%e9/%ff%",
            r#"parse "https://%e9/%ff%": invalid URL escape "%""#,
        ),
    ];
    for &(pattern, want) in rows {
        assert_eq!(
            explain(pattern, "registry.io"),
            unparsable(Side::Pattern, want),
            "{pattern}"
        );
    }
}

#[test]
fn normalize_auth_key_follows_basic_docker_keyring_add() {
    let rows: &[(&str, Result<&str, &str>)] = &[
        ("https://quay.io/v1/", Ok("quay.io")),
        ("quay.io/v2/", Ok("quay.io")),
        ("quay.io/v2/team", Ok("quay.io/team")),
        ("quay.io/v1", Ok("quay.io/v1")),
        ("http://quay.io/", Ok("quay.io")),
        ("quay.io:5000/a%2Fb", Ok("quay.io:5000/a/b")),
        ("user:pw@quay.io", Ok("quay.io")),
        ("quay.io?x=1#frag", Ok("quay.io")),
        // The scheme test is case-sensitive, so this one gets a second scheme.
        ("HTTPS://quay.io", Ok("HTTPS://quay.io")),
        ("", Ok("")),
        (
            "quay.io/%zz",
            Err(r#"parse "https://quay.io/%zz": invalid URL escape "%zz""#),
        ),
        (
            "https://[::1",
            Err(r#"parse "https://[::1": missing ']' in host"#),
        ),
    ];
    for &(key, want) in rows {
        let want = want.map(str::to_owned).map_err(str::to_owned);
        assert_eq!(normalize_auth_key(key), want, "{key:?}");
    }
}

#[test]
fn keyring_lookup_follows_the_kubelet() {
    // Unparsable keys are dropped.
    assert_eq!(
        keyring_lookup(&["quay.io/%zz", "quay.io"], "quay.io/app"),
        vec!["quay.io"]
    );
    // Keys that normalise alike share an entry and come back in the order given.
    let same = ["https://quay.io", "quay.io/v1/", "quay.io"];
    assert_eq!(keyring_lookup(&same, "quay.io/app"), same.to_vec());
    // Reverse-lexicographic: a concrete host sorts above a wildcard.
    assert_eq!(
        keyring_lookup(&["*.example.com", "a.example.com"], "a.example.com/x"),
        vec!["a.example.com", "*.example.com"]
    );
    // The stored key is the decoded path, parsed again at lookup: here that fails.
    assert_eq!(
        normalize_auth_key("quay.io/a%25zz").as_deref(),
        Ok("quay.io/a%zz")
    );
    assert!(keyring_lookup(&["quay.io/a%25zz"], "quay.io/a%25zz/x").is_empty());
}

#[test]
fn keyring_docker_hub_fallback() {
    let hub = "https://index.docker.io/v1/";
    for image in [
        "library/nginx",
        "nginx",
        "docker.io/library/nginx",
        "index.docker.io/library/nginx",
    ] {
        assert_eq!(keyring_lookup(&[hub], image), vec![hub], "{image}");
    }
    assert!(keyring_lookup(&[hub], "registry.tld/nginx").is_empty());
    // Only used when nothing else matched.
    assert_eq!(
        keyring_lookup(&["index.docker.io", "docker.io"], "docker.io/library/nginx"),
        vec!["docker.io"]
    );
    // Only the exact key index.docker.io, not a glob that would cover it.
    assert!(keyring_lookup(&["*.docker.io"], "library/nginx").is_empty());
}

/// Every public function on one pair, checking the answers agree with each other.
fn exercise(a: &str, b: &str) {
    let outcome = explain(a, b);
    assert_eq!(urls_match(a, b), outcome.is_match(), "{a:?} {b:?}");
    assert_eq!(match_image(a, b), outcome.is_match(), "{a:?} {b:?}");
    assert!(!outcome.to_string().is_empty());
    let found = keyring_lookup(&[a, b], b);
    assert!(found.iter().all(|k| *k == a || *k == b));
    let _ = glob_match(a, b);
}

#[test]
fn odd_inputs_never_panic() {
    let odd = [
        "",
        "[",
        "]",
        "\\",
        "%",
        "%%",
        "%zz",
        "%e9",
        "%25",
        "[%25]",
        "[::%2525]",
        "[::1",
        "[::1]",
        "[::1]:",
        "[::1]:80",
        "[1.2.3.4]",
        "[fe80::1%25en0]:5000",
        "[::1.2.3.4]",
        "a:b:c",
        "a:1:2",
        "host:",
        ":",
        "@",
        "user@",
        "a@b@c",
        "?",
        "#",
        "*",
        "**",
        "/",
        "//",
        "///",
        "https://",
        "http://x",
        "☺",
        "é.ü",
        "\u{0}",
        "\u{7f}",
        "a b",
        "日本.jp/路径",
        "\u{FFFD}",
        "*.*.*",
        "[^a]",
        "a[",
        "\\.io",
        "/v1/",
        "index.docker.io",
    ];
    for a in odd {
        let _ = normalize_auth_key(a);
        let _ = is_default_registry_match(a);
        for b in odd {
            exercise(a, b);
        }
    }
}

#[test]
fn huge_inputs_never_panic() {
    let long_label = "a".repeat(1 << 18);
    let huge = [
        long_label.clone(),
        format!("{}io", "*.".repeat(100_000)),
        "%".repeat(100_000),
        "[".repeat(100_000),
        format!("{}b", "*a".repeat(2_000)),
        format!("x.io/{}", "%41".repeat(100_000)),
    ];
    for a in &huge {
        let _ = normalize_auth_key(a);
        let _ = is_default_registry_match(a);
        for b in ["", "a", "x.io/app"] {
            exercise(a, b);
            exercise(b, a);
        }
    }
    assert!(urls_match(&long_label, &long_label));
    assert_eq!(glob_match(&huge[4], &"a".repeat(10_000)), Ok(false));
    assert_eq!(glob_match(&huge[3], "["), Err(BadPattern));
}

#[test]
fn is_match_only_for_match() {
    assert!(MatchOutcome::Match.is_match());
    assert!(
        !MatchOutcome::BadGlob {
            pattern_label: "[".to_owned()
        }
        .is_match()
    );
    assert!(!unparsable(Side::Target, "x").is_match());
}
