//! Unit tests of the plan: which identity, which cache key, refusals, the answer's shape.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use kcp_kubelet::ApiVersion;
use kcp_kubelet::protocol::encode_request;

use super::*;

fn provider(node: NodeIdentity) -> AlibabaProvider {
    AlibabaProvider {
        instances: ConfiguredInstances::from([(
            "images.example.com".to_owned(),
            InstanceId::parse("cri-abc").unwrap(),
        )]),
        region: None,
        rrsa: Rrsa {
            oidc_provider_arn: Some(
                OidcProviderArn::parse("acs:ram::42:oidc-provider/c1").unwrap(),
            ),
            account_id: None,
            role_annotation_key: DEFAULT_ROLE_ANNOTATION.to_owned(),
            session_duration: Duration::from_secs(3600),
        },
        node,
        metadata_endpoint: Url::parse("http://100.100.100.200").unwrap(),
        endpoints: Endpoints::default(),
        token_cache: None,
    }
}

fn node_role() -> AlibabaProvider {
    provider(NodeIdentity::RamRole { role: None })
}

fn static_key() -> AlibabaProvider {
    provider(NodeIdentity::StaticKey(AccessKey {
        id: "LTAIkey".to_owned(),
        secret: Secret::new("unit-secret"),
        security_token: None,
        expiration: None,
    }))
}

fn sa_token(namespace: &str, name: &str) -> String {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    let claims = format!(
        r#"{{"aud":["sts.aliyuncs.com"],"kubernetes.io":{{"namespace":"{namespace}","serviceaccount":{{"name":"{name}","uid":"u-1"}}}}}}"#
    );
    format!("{}.{}.sig", b64(r#"{"alg":"RS256"}"#), b64(&claims))
}

fn request(image: &str, token: Option<&str>, role: Option<&str>) -> CredentialProviderRequest {
    let annotations: BTreeMap<String, String> = role
        .map(|r| BTreeMap::from([(DEFAULT_ROLE_ANNOTATION.to_owned(), r.to_owned())]))
        .unwrap_or_default();
    CredentialProviderRequest::from_bytes(&encode_request(
        ApiVersion::V1,
        image,
        token,
        &annotations,
    ))
    .unwrap()
}

#[test]
fn identities_in_order() {
    let token = sa_token("team-a", "app");
    let p = node_role();
    let host = "myinst-registry.cn-hangzhou.cr.aliyuncs.com/app";
    let r = request(host, Some(&token), Some("puller"));
    let plan = p.plan(&r).unwrap();
    match &plan.identity {
        Identity::Rrsa {
            role_arn,
            session_name,
            ..
        } => {
            assert_eq!(role_arn, "acs:ram::42:role/puller");
            assert_eq!(session_name, "team-a.app");
        }
        other => panic!("{other:?}"),
    }
    assert!(!plan.node_fallback);
    // A token without the annotation: the node, noted for the info line.
    let r = request(host, Some(&token), None);
    let plan = p.plan(&r).unwrap();
    assert!(matches!(plan.identity, Identity::RamRole(None)));
    assert!(plan.node_fallback);
    // No token: the node, nothing to note.
    let r = request(host, None, Some("puller"));
    let plan = p.plan(&r).unwrap();
    assert!(matches!(plan.identity, Identity::RamRole(None)));
    assert!(!plan.node_fallback);
    // Static keys come before the node's role.
    let s = static_key();
    let r = request(host, None, None);
    assert!(matches!(
        s.plan(&r).unwrap().identity,
        Identity::StaticKey(_)
    ));
    // --account-id wins over the provider ARN's account.
    let mut p = node_role();
    p.rrsa.account_id = Some("7".to_owned());
    let r = request(host, Some(&token), Some("puller"));
    match p.plan(&r).unwrap().identity {
        Identity::Rrsa { role_arn, .. } => assert_eq!(role_arn, "acs:ram::7:role/puller"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn refusals_in_plan() {
    let token = sa_token("team-a", "app");
    let p = node_role();
    let err = p
        .plan(&request(
            "registry.cn-hangzhou.aliyuncs.com.evil.test/app",
            None,
            None,
        ))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("is not an Alibaba Cloud Container Registry host")
    );
    let mut no_arn = node_role();
    no_arn.rrsa.oidc_provider_arn = None;
    let r = request(
        "registry.cn-hangzhou.aliyuncs.com/app",
        Some(&token),
        Some("puller"),
    );
    assert!(
        no_arn
            .plan(&r)
            .unwrap_err()
            .to_string()
            .contains("set --oidc-provider-arn")
    );
    let r = request(
        "registry.cn-hangzhou.aliyuncs.com/app",
        Some(&token),
        Some("a/b c"),
    );
    assert!(
        p.plan(&r)
            .unwrap_err()
            .to_string()
            .contains("fix the annotation")
    );
}

#[test]
fn cache_keys() {
    let key = |p: &AlibabaProvider, r: &CredentialProviderRequest| {
        p.plan(r).unwrap().cache_key.map(|k| k.canonical())
    };
    let p = node_role();
    let s = static_key();
    let legacy = request("registry.cn-hangzhou.aliyuncs.com/app", None, None);
    let crpi = request(
        "crpi-x1.cn-hangzhou.personal.cr.aliyuncs.com/app",
        None,
        None,
    );
    let beijing = request("registry.cn-beijing.aliyuncs.com/app", None, None);
    let ent = request(
        "myinst-registry.cn-hangzhou.cr.aliyuncs.com/app",
        None,
        None,
    );
    let vpc = request(
        "myinst-registry-vpc.cn-hangzhou.cr.aliyuncs.com/app",
        None,
        None,
    );
    let custom = request("images.example.com/app", None, None);
    assert_eq!(
        key(&p, &legacy),
        key(&p, &crpi),
        "one Personal login per region"
    );
    assert_ne!(key(&p, &legacy), key(&p, &beijing));
    assert_eq!(key(&p, &ent), key(&p, &vpc), "one login per instance");
    assert_ne!(key(&p, &ent), key(&p, &legacy));
    assert_ne!(key(&p, &ent), key(&p, &custom));
    assert_ne!(
        key(&p, &legacy),
        key(&s, &legacy),
        "static keys are another identity"
    );
    let text = key(&s, &legacy).unwrap();
    assert!(
        !text.contains("LTAIkey") && !text.contains("unit-secret"),
        "{text}"
    );
    // Pods: per service account and role; none without claims.
    let a = sa_token("team-a", "app");
    let b = sa_token("team-b", "app");
    let pod = |t: &str, role: &str| {
        key(
            &p,
            &request("registry.cn-hangzhou.aliyuncs.com/app", Some(t), Some(role)),
        )
    };
    assert_ne!(pod(&a, "r1"), pod(&b, "r1"));
    assert_ne!(pod(&a, "r1"), pod(&a, "r2"));
    assert_ne!(pod(&a, "r1"), key(&p, &legacy));
    assert_eq!(pod("not-a-jwt", "r1"), None);
}

#[test]
fn session_names() {
    assert_eq!(
        session_name(&Secret::new(sa_token("team-a", "app"))),
        "team-a.app"
    );
    let long = "n".repeat(100);
    assert_eq!(session_name(&Secret::new(sa_token(&long, "app"))).len(), 64);
    assert_eq!(
        session_name(&Secret::new("opaque")),
        "alibaba-credential-provider"
    );
}

#[test]
fn the_answer_is_the_host_exactly_with_the_margin() {
    let p = node_role();
    let r = request("registry.cn-hangzhou.aliyuncs.com/team/app", None, None);
    let plan = p.plan(&r).unwrap();
    let now = SystemTime::now();
    let token = RegistryToken {
        username: "u".to_owned(),
        password: Secret::new("pw"),
        expires_at: Some(now + Duration::from_secs(3600)),
        obtained_at: now,
    };
    let c = answer(&r, &plan, &token);
    assert_eq!(c.cache_key_type, CacheKeyType::Registry);
    assert_eq!(
        c.cache_duration.map(|d| d.to_string()),
        Some("55m0s".to_owned())
    );
    assert_eq!(
        c.auth.keys().collect::<Vec<_>>(),
        ["registry.cn-hangzhou.aliyuncs.com"]
    );
}

#[test]
fn instance_gone_codes() {
    for (code, gone) in [
        ("INSTANCE_NOT_EXIST", true),
        ("InstanceNotExist", true),
        ("Instance.NotFound", true),
        ("Forbidden.RAM", false),
        ("NotFound", false),
    ] {
        assert_eq!(is_instance_gone_code(code), gone, "{code}");
    }
}
