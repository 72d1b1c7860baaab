//! The registries file: every protocol read from YAML and JSON, the refusals with the entry and
//! field named, the defaults, and the host matching.

use super::*;
use crate::protocol::{JWT_TOKEN_TYPE, QUAY_ROBOT_ANNOTATION};

fn parse(text: &str) -> Result<Registries, FileError> {
    Registries::parse(text, "r.yaml")
}

fn problems(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

const ALL_SIX: &str = r#"
registries:
  - host: acme.jfrog.io
    protocol: jfrog
    providerName: k8s-prod
    providerType: Generic
    projectKey: team
  - host: quay.io
    protocol: quay-robot
    robotAccount: acme+puller
  - host: docker.cloudsmith.io
    protocol: cloudsmith
    organization: acme
    serviceSlug: puller
  - host: cgr.dev
    protocol: chainguard
    identity: 0123/4567
  - host: registry.acme.internal
    protocol: token-exchange
    endpoint: https://sso.acme.internal/realms/x/protocol/openid-connect/token
    audience: registry
    username: oauth2
  - host: harbor.acme.internal:8443
    protocol: passthrough
    username: jwt
"#;

#[test]
fn reads_every_protocol_from_yaml() {
    let r = parse(ALL_SIX).unwrap();
    let protocols: Vec<&str> = r.registries.iter().map(|r| r.protocol.name()).collect();
    assert_eq!(
        protocols,
        [
            "jfrog",
            "quay-robot",
            "cloudsmith",
            "chainguard",
            "token-exchange",
            "passthrough"
        ]
    );
    assert_eq!(
        r.registries[0].protocol,
        Protocol::Jfrog(Jfrog {
            provider_name: "k8s-prod".into(),
            provider_type: Some("Generic".into()),
            audience: None,
            project_key: Some("team".into()),
            identity_mapping_name: None,
            username: None,
        })
    );
    let Protocol::TokenExchange(t) = &r.registries[4].protocol else {
        panic!("token-exchange")
    };
    assert_eq!(t.subject_token_type(), JWT_TOKEN_TYPE);
    assert_eq!(t.audience.as_deref(), Some("registry"));
}

#[test]
fn reads_json_as_well() {
    let json = r#"{"registries":[{"host":"quay.io","protocol":"quay-robot","robotAccountAnnotation":"acme.test/robot"}]}"#;
    let r = parse(json).unwrap();
    let Protocol::QuayRobot(q) = &r.registries[0].protocol else {
        panic!("quay")
    };
    assert_eq!(q.robot_source(), RobotSource::Annotation("acme.test/robot"));
}

#[test]
fn endpoints_default_per_protocol() {
    let r = parse(ALL_SIX).unwrap();
    let endpoint = |i: usize, host: &str| {
        r.registries[i]
            .endpoint_for(host)
            .map(|e| e.unwrap().to_string())
    };
    assert_eq!(
        endpoint(0, "acme.jfrog.io").as_deref(),
        Some("https://acme.jfrog.io/")
    );
    assert_eq!(
        endpoint(1, "quay.io:8443").as_deref(),
        Some("https://quay.io:8443/")
    );
    assert_eq!(
        endpoint(2, "docker.cloudsmith.io").as_deref(),
        Some("https://api.cloudsmith.io/")
    );
    assert_eq!(
        endpoint(3, "cgr.dev").as_deref(),
        Some("https://issuer.enforce.dev/")
    );
    assert_eq!(
        endpoint(4, "registry.acme.internal").as_deref(),
        Some("https://sso.acme.internal/realms/x/protocol/openid-connect/token")
    );
    assert_eq!(endpoint(5, "harbor.acme.internal:8443"), None);
}

#[test]
fn quay_robot_sources() {
    let q = |robot: Option<&str>, annotation: Option<&str>| QuayRobot {
        robot_account: robot.map(Into::into),
        robot_account_annotation: annotation.map(Into::into),
    };
    assert_eq!(
        q(Some("a+b"), None).robot_source(),
        RobotSource::Fixed("a+b")
    );
    assert_eq!(
        q(None, None).robot_source(),
        RobotSource::Annotation(QUAY_ROBOT_ANNOTATION)
    );
    assert!(
        problems("registries:\n- host: quay.io\n  protocol: quay-robot\n  robotAccount: a+b\n  robotAccountAnnotation: x/y\n")
            .contains(r#"registries[0] (host "quay.io"): set either "robotAccount" or "robotAccountAnnotation", not both"#)
    );
    // A robot account the exchange would refuse is refused at load (exit 2), not at the first pull.
    for bad in ["acme", "acme+", "+puller", "acme+pul ler", "acme+pul:ler"] {
        assert!(
            problems(&format!("registries:\n- host: quay.io\n  protocol: quay-robot\n  robotAccount: {bad:?}\n"))
                .contains(r#"registries[0] (host "quay.io"): field "robotAccount" is not a Quay robot account: <org>+<robot>, without ':' or spaces"#),
            "{bad}"
        );
    }
    assert!(
        parse(
            "registries:\n- host: quay.io\n  protocol: quay-robot\n  robotAccount: acme+puller\n"
        )
        .is_ok()
    );
    assert!(QuayRobot::is_robot_account("acme+puller"));
}

#[test]
fn every_problem_is_named_with_file_entry_and_field() {
    let text = "registries:
- host: quay.io
  protocol: passthrough
  username: ''
- protocol: passthrough
  username: jwt
- host: a.test
  protocol: token-exchange
  endpoint: https://sso.a.test/token
  username: u
  clientSecretFile: /etc/secret
- host: b.test
  protocol: passthrough
  endpoint: https://b.test
  username: jwt
- host: c.test
  protocol: cloudsmith
  organization: acme
  serviceSlug: x
  extra: [1]
- 7
";
    assert_eq!(
        problems(text),
        [
            r#"registries file r.yaml: registries[0] (host "quay.io"): field "username" is empty"#,
            r#"registries[1]: missing field "host": the registry host (a matchImages-style glob such as quay.io or *.jfrog.io)"#,
            r#"registries[2] (host "a.test"): field "clientSecretFile" needs "clientId" (the client the secret belongs to)"#,
            r#"registries[3] (host "b.test"): field "endpoint" is not used by passthrough, which sends no request: remove it"#,
            r#"registries[4] (host "c.test"): field "extra" must be a string, got a list"#,
            "registries[5]: expected a mapping, got a number",
        ]
        .join("; ")
    );
}

#[test]
fn missing_protocol_and_wrong_top_level_shapes() {
    assert!(problems("registries:\n- host: quay.io\n").contains(
        r#"registries[0] (host "quay.io"): missing field "protocol": use one of passthrough"#
    ));
    assert!(
        problems("- host: quay.io\n")
            .contains("expected a mapping with a registries list, got a list")
    );
    assert!(problems("registries: quay.io\n").contains("registries must be a list, got a string"));
    // YAML 1.1 as the kubelet reads it: an unquoted `yes` is a boolean, not a string.
    assert!(
        problems("registries:\n- host: quay.io\n  protocol: passthrough\n  username: yes\n")
            .contains(r#"field "username" must be a string, got a boolean"#)
    );
}

#[test]
fn find_matches_as_the_kubelet_matches_match_images() {
    let r = parse(
        "registries:
- host: '*.jfrog.io'
  protocol: jfrog
  providerName: p
- host: quay.io
  protocol: quay-robot
- host: registry.local:5000
  protocol: passthrough
  username: jwt
",
    )
    .unwrap();
    let found = |image: &str| r.find(image).map(|(i, _)| i);
    assert_eq!(found("acme.jfrog.io/docker/app:1"), Some(0));
    assert_eq!(found("quay.io/acme/app@sha256:abc"), Some(1));
    assert_eq!(found("registry.local:5000/app"), Some(2));
    for image in [
        "jfrog.io/app",
        "a.b.jfrog.io/app",
        "quay.io.evil.test/acme/app",
        "evilquay.io/app",
        "quay.io:443/app",
        "registry.local/app",
        "registry.local:5001/app",
        "evil.test/quay.io/app",
        "nginx",
    ] {
        assert_eq!(found(image), None, "{image}");
    }
    assert_eq!(r.hosts(), "*.jfrog.io, quay.io, registry.local:5000");
}

#[test]
fn loads_from_a_file_and_names_it() {
    let dir = std::env::temp_dir().join(format!("kcp-oidc-registries-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("registries.yaml");
    std::fs::write(&path, ALL_SIX).unwrap();
    assert_eq!(Registries::load(&path).unwrap().registries.len(), 6);
    let missing = dir.join("missing.yaml");
    let e = Registries::load(&missing).unwrap_err();
    assert_eq!(e.file, missing.display().to_string());
    assert!(e.to_string().contains("cannot be read"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Found by the oidc_registries fuzz target: serde quoted an unknown field's name raw, so a line
/// break in it split the one error line.
#[test]
fn an_unknown_field_with_a_line_break_is_named_on_one_line() {
    let message = problems(
        "{\"registries\":[{\"host\":\"quay.io\",\"protocol\":\"quay-robot\",\"robot\\r\\nAccount\":\"a+b\"}]}",
    );
    assert!(!message.contains(['\n', '\r']), "{message}");
    assert!(
        message.contains(r#"unknown field "robot\r\nAccount""#),
        "{message}"
    );
}

const IBM: &str = r#"
registries:
  - host: icr.io
    protocol: ibm-iam
    profileId: Profile-6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d
  - host: "*.icr.io"
    protocol: ibm-iam
    profileName: k8s-puller
    endpoint: https://private.iam.cloud.ibm.com
"#;

#[test]
fn ibm_iam_names_its_trusted_profile_by_id_or_by_name() {
    let r = parse(IBM).unwrap();
    assert_eq!(
        r.registries[0].protocol,
        Protocol::IbmIam(IbmIam {
            profile: IbmProfile::Id("Profile-6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d".into())
        })
    );
    assert_eq!(r.registries[0].protocol.name(), "ibm-iam");
    let Protocol::IbmIam(named) = &r.registries[1].protocol else {
        panic!("ibm-iam")
    };
    assert_eq!(
        named.profile.parameter(),
        ("profile_name", "profileName", "k8s-puller")
    );
    // IAM's public endpoint by default; an entry's own (IAM's private endpoint) wins.
    let endpoint = |i: usize, host: &str| r.registries[i].endpoint_for(host).unwrap().unwrap();
    assert_eq!(endpoint(0, "icr.io").as_str(), "https://iam.cloud.ibm.com/");
    assert_eq!(
        endpoint(1, "us.icr.io").as_str(),
        "https://private.iam.cloud.ibm.com/"
    );
    assert_eq!(r.find("de.icr.io/acme/app:1").map(|(i, _)| i), Some(1));
    assert_eq!(r.find("icr.io.evil.test/acme/app").map(|(i, _)| i), None);
}

/// Exactly one of profileId and profileName: both, neither, an empty one, a misspelt one and a
/// field of another protocol are each one problem naming the entry and the field.
#[test]
fn ibm_iam_takes_exactly_one_profile() {
    let entry = |fields: &str| {
        problems(&format!(
            "registries:\n- host: icr.io\n  protocol: ibm-iam\n{fields}"
        ))
    };
    let at = r#"registries file r.yaml: registries[0] (host "icr.io"): "#;
    assert_eq!(
        entry("  profileId: Profile-1\n  profileName: puller\n"),
        format!(r#"{at}set either "profileId" or "profileName" (the trusted profile), not both"#)
    );
    assert_eq!(
        entry(""),
        format!(
            r#"{at}missing field "profileId" or "profileName": ibm-iam needs the IAM trusted profile the pods' tokens are traded for (its id, Profile-..., or its name)"#
        )
    );
    assert_eq!(
        entry("  endpoint: https://iam.cloud.ibm.com\n"),
        entry(""),
        "an endpoint is not a profile"
    );
    assert_eq!(
        entry("  profileName: ' '\n"),
        format!(r#"{at}field "profileName" is empty"#)
    );
    assert_eq!(
        entry("  profileID: Profile-1\n"),
        format!(r#"{at}unknown field "profileID", expected "profileId" or "profileName""#)
    );
    assert_eq!(
        entry("  profileId: Profile-1\n  username: iambearer\n"),
        format!(r#"{at}unknown field "username", expected "profileId" or "profileName""#)
    );
    assert_eq!(
        entry("  profileId: Profile-1\n  endpoint: http://iam.cloud.ibm.com\n"),
        format!(
            r#"{at}endpoint "http://iam.cloud.ibm.com" uses plain http: the service-account token would cross the network unencrypted; use https (http is accepted for loopback hosts only)"#
        )
    );
    for message in [entry(""), entry("  profileId: a\n  profileName: b\n")] {
        assert!(!message.contains(['\n', '\r']), "{message}");
    }
}

/// Every registries file docs/providers/oidc.md shows (each ```yaml block that starts with
/// `registries:`) is one the provider reads, so a reader copying one gets a working start.
#[test]
fn the_docs_example_files_are_accepted() {
    let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/providers/oidc.md");
    let text = std::fs::read_to_string(docs).unwrap();
    let mut found = Vec::new();
    let mut block: Option<(usize, Vec<&str>)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match &mut block {
            None if trimmed == "```yaml" => block = Some((line.len() - trimmed.len(), Vec::new())),
            Some((_, lines)) if trimmed == "```" => {
                if lines.first().is_some_and(|l| l.starts_with("registries:")) {
                    found.push(lines.join("\n"));
                }
                block = None;
            }
            Some((indent, lines)) => lines.push(line.get(*indent..).unwrap_or("")),
            None => {}
        }
    }
    let protocols: Vec<String> = found
        .iter()
        .flat_map(|file| {
            let parsed = Registries::parse(file, "docs").unwrap_or_else(|e| panic!("{e}\n{file}"));
            parsed
                .registries
                .into_iter()
                .map(|r| r.protocol.name().to_owned())
        })
        .collect();
    for name in Protocol::NAMES {
        assert!(protocols.iter().any(|p| p == name), "no example for {name}");
    }
}
