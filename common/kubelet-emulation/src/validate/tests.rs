use super::*;

#[test]
fn qualified_names_follow_apimachinery() {
    assert!(qualified_name_errors("domain.io/identity-id").is_empty());
    assert_eq!(
        qualified_name_errors("cantendwithadash-"),
        vec!["name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_owned()]
    );
    assert_eq!(
        qualified_name_errors("/x"),
        vec!["prefix part must be non-empty".to_owned()]
    );
    assert_eq!(qualified_name_errors("a/b/c").len(), 1);
}

#[test]
fn mirror_sources_outside_match_images_are_warned_about() {
    let provider = |match_images: &[&str], args: &[&str]| Provider {
        name: "ecr-credential-provider".into(),
        match_images: match_images.iter().map(|s| (*s).to_owned()).collect(),
        default_cache_duration: None,
        api_version: String::new(),
        args: args.iter().map(|s| (*s).to_owned()).collect(),
        env: vec![],
        token_attributes: None,
        source: Default::default(),
    };
    let found = |p: &Provider| {
        let mut w = vec![];
        warnings(p, &mut w);
        w.into_iter().map(|f| f.message).collect::<Vec<_>>()
    };
    let covered = provider(
        &["*.dkr.ecr.*.amazonaws.com", "docker.io", "reg.local:5000"],
        &[
            "--registry-mirror=docker.io:123456789012.dkr.ecr.us-west-2.amazonaws.com",
            "-r",
            "reg.local:5000=123456789012.dkr.ecr.us-west-2.amazonaws.com",
        ],
    );
    assert_eq!(found(&covered), Vec::<String>::new());
    let uncovered = provider(
        &["*.dkr.ecr.*.amazonaws.com", "reg.local"],
        &[
            "--registry-mirror",
            "docker.io:123456789012.dkr.ecr.us-west-2.amazonaws.com,reg.local:5000=x,bad:a:b",
        ],
    );
    assert_eq!(
        found(&uncovered),
        vec![
            "ignoring --registry-mirror entry \"bad:a:b\": expected <source-host>:<destination-registry> (or <source-host:port>=<destination-registry>) (acr-credential-provider skips it, ecr-credential-provider refuses to start)".to_owned(),
            "--registry-mirror source \"docker.io\" is not covered by matchImages, so the kubelet never runs the plugin for its images; add \"docker.io\" to matchImages".to_owned(),
            "--registry-mirror source \"reg.local:5000\" is not covered by matchImages, so the kubelet never runs the plugin for its images; add \"reg.local:5000\" to matchImages".to_owned(),
        ]
    );
}

#[test]
fn our_providers_args_are_checked_by_binary_name() {
    let provider = |name: &str, args: &[&str]| Config {
        files: vec![],
        directory: false,
        providers: vec![Provider {
            name: name.into(),
            match_images: vec!["*.dkr.ecr.*.amazonaws.com".into()],
            default_cache_duration: Some(GoDuration::from_secs(60)),
            api_version: "credentialprovider.kubelet.k8s.io/v1".into(),
            args: args.iter().map(|s| (*s).to_owned()).collect(),
            env: vec![],
            token_attributes: None,
            source: Default::default(),
        }],
    };
    let v = validate(
        &provider(
            "ecr-credential-provider",
            &["get-credentials", "--strict-host"],
        ),
        None,
    );
    assert!(v.ok() && !v.valid());
    assert_eq!(
        v.arguments,
        vec![Finding {
            provider: Some("ecr-credential-provider".into()),
            message: "args: unknown flag --strict-host (did you mean --strict-hosts?); ecr-credential-provider refuses its arguments and exits 2 on every exec".into(),
        }]
    );
    assert_eq!(
        v.kubelet_message(),
        None,
        "the kubelet itself takes any args"
    );
    let v = validate(
        &provider(
            "ecr-credential-provider",
            &["get-credentials", "--strict-hosts"],
        ),
        None,
    );
    assert!(v.valid(), "{:?}", v.arguments);
    // Someone else's plugin: its args are its own business.
    let v = validate(&provider("my-plugin", &["--strict-host"]), None);
    assert!(v.valid());
}

#[test]
fn aggregate_brackets_only_several_errors() {
    let f = |m: &str| Finding {
        provider: None,
        message: m.into(),
    };
    assert_eq!(
        aggregate(&[f("a")]).as_deref(),
        Some("failed to validate credential provider config: a")
    );
    assert_eq!(
        aggregate(&[f("a"), f("b"), f("a")]).as_deref(),
        Some("failed to validate credential provider config: [a, b]")
    );
    assert_eq!(aggregate(&[]), None);
}

#[test]
fn a_repeated_name_kills_a_1_32_kubelet_only_once_it_reaches_registration() {
    let provider = |name: &str, api_version: &str| Provider {
        name: name.into(),
        match_images: vec!["registry.example.com".into()],
        default_cache_duration: Some(GoDuration::from_secs(60)),
        api_version: api_version.into(),
        args: vec![],
        env: vec![],
        token_attributes: None,
        source: Default::default(),
    };
    let v1 = "credentialprovider.kubelet.k8s.io/v1";
    let config = |providers| Config {
        files: vec![],
        directory: false,
        providers,
    };
    let kubelet = Kubelet::new(Some("1.32"), None).unwrap();
    let twice = config(vec![provider("p", v1), provider("p", v1)]);
    let fatal = "Credential provider \"p\" was registered twice";
    let v = validate_for(&twice, None, &kubelet);
    assert_eq!(v.fatal.as_ref().map(|f| f.message.as_str()), Some(fatal));
    assert_eq!(v.kubelet_exit().map(|e| e.status), Some(255));

    // A validation error ends the start before registration.
    let invalid = config(vec![
        provider("p", v1),
        provider("p", ""),
        provider("q", ""),
    ]);
    let v = validate_for(&invalid, None, &kubelet);
    assert_eq!(v.fatal, None);
    assert_eq!(v.kubelet_exit().map(|e| e.status), Some(1));

    // A binary missing after the repeated name is never looked up: the repeat kills it first.
    let dir = std::env::temp_dir().join(format!("kcp-registered-twice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(plugin_binary(&dir, "p"), "").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let perms = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(plugin_binary(&dir, "p"), perms).unwrap();
    }
    let later_missing = config(vec![
        provider("p", v1),
        provider("p", v1),
        provider("q", v1),
    ]);
    let v = validate_for(&later_missing, Some(&dir), &kubelet);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(v.registration.len(), 1, "{:?}", v.registration);
    assert_eq!(
        v.kubelet_exit().map(|e| (e.status, e.line)),
        Some((255, fatal.to_owned()))
    );
}
