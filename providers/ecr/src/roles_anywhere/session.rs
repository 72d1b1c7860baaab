//! The `CreateSession` call: its endpoint (the profile's `--endpoint`,
//! `AWS_ENDPOINT_URL_ROLESANYWHERE`, `AWS_ENDPOINT_URL`, else the trust anchor's region and
//! partition, FIPS on request), the signed POST through the shared client (proxies, timeouts,
//! retries of connection errors, 429 and 5xx inside the deadline), the answer's credential set
//! as AWS credentials, and one line per refusal naming what to check.

use std::time::{Duration, SystemTime};

use anyhow::anyhow;
use aws_credential_types::Credentials as AwsCredentials;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{Call, HttpClient, ProxyConfig, RetryRules, Route, Statuses};
use reqwest::{Method, Url};

use super::sign::{Signing, sign};
use super::{Loaded, RolesAnywhere, SERVICE_ENV};

/// Connect timeout for CreateSession.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Longest single attempt.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connection errors, timeouts, 429 and 5xx retried; 2xx and 4xx handed back (a 4xx's body names
/// the exception).
const RULES: RetryRules = RetryRules {
    answers: Statuses(&[(200, 299), (400, 499)]),
    ..RetryRules::DEFAULT
};

/// Exchanges the certificate for the role's credentials. Their secrets are remembered for
/// redaction before they leave this function.
pub async fn credentials(
    ra: &RolesAnywhere,
    loaded: &Loaded,
    deadline: Deadline,
) -> anyhow::Result<AwsCredentials> {
    let url = endpoint(ra).map_err(|e| anyhow!(e))?;
    let host = url.host_str().unwrap_or_default();
    let context = format!(
        "IAM Roles Anywhere CreateSession at {host} for role {} (trust anchor {}, profile {}, certificate serial {}, from the {})",
        ra.role_arn, ra.trust_anchor.arn, ra.profile.arn, loaded.certificate.serial, ra.source
    );
    let mut body = serde_json::json!({
        "durationSeconds": ra.session_duration.as_secs(),
        "profileArn": ra.profile.arn,
        "roleArn": ra.role_arn,
        "trustAnchorArn": ra.trust_anchor.arn,
    });
    if let Some(name) = &ra.role_session_name {
        body["roleSessionName"] = serde_json::Value::String(name.clone());
    }
    let body = body.to_string().into_bytes();
    let host_header = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let signed = sign(
        &Signing {
            host: &host_header,
            path: url.path(),
            query: &[],
            body: &body,
            region: &ra.region,
            now: SystemTime::now(),
            certificate: &loaded.certificate,
            chain: &loaded.chain,
        },
        &loaded.signer,
    )
    .map_err(|e| anyhow!("{context} failed: {e}"))?;
    let headers: Vec<(&str, &str)> = signed
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let client = HttpClient::new(&ProxyConfig::from_env(), CONNECT_TIMEOUT, ATTEMPT_TIMEOUT);
    let call = Call {
        route: Route::Internet,
        method: Method::POST,
        url: &url,
        headers: &headers,
        body: Some(&body),
        what: "IAM Roles Anywhere CreateSession",
    };
    let answer = client
        .send_retrying_with(call, deadline, &RULES)
        .await
        .map_err(|e| anyhow!("{context} failed: {}", kcp_plugin::logging::error_chain(&e)))?;
    if !(200..300).contains(&answer.status) {
        return Err(anyhow!(
            "{context} failed: {}",
            refusal(
                answer.status,
                answer.header("x-amzn-errortype"),
                &answer.body
            )
        ));
    }
    let credentials = parse_answer(&answer.body).map_err(|e| {
        anyhow!(
            "{context} answered HTTP {} without usable credentials: {e}",
            answer.status
        )
    })?;
    tracing::info!(
        role = ra.role_arn,
        serial = loaded.certificate.serial,
        expires = credentials
            .expiry()
            .map(super::cert::rfc3339)
            .unwrap_or_default(),
        "IAM Roles Anywhere session obtained"
    );
    Ok(credentials)
}

/// Where CreateSession is called: the profile's `--endpoint`, the environment's
/// (`AWS_ENDPOINT_URL_ROLESANYWHERE`, then `AWS_ENDPOINT_URL`), else
/// `https://rolesanywhere[-fips].<region>.<partition's DNS suffix>`, plus `/sessions`. Plain
/// http only to loopback.
pub fn endpoint(ra: &RolesAnywhere) -> Result<Url, String> {
    let (base, what) = if let Some(endpoint) = &ra.endpoint {
        (endpoint.clone(), format!("--endpoint of the {}", ra.source))
    } else if let Some((variable, value)) = crate::aws::endpoint_override(SERVICE_ENV) {
        (value, variable)
    } else {
        let fips =
            std::env::var("AWS_USE_FIPS_ENDPOINT").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
        (
            default_endpoint(&ra.trust_anchor.partition, &ra.region, fips)?,
            "the IAM Roles Anywhere endpoint".to_owned(),
        )
    };
    let url = kcp_plugin::endpoint::secure_url(&base, &what).map_err(|e| e.to_string())?;
    let path = format!("{}/sessions", url.path().trim_end_matches('/'));
    let mut url = url;
    url.set_path(&path);
    url.set_query(None);
    Ok(url)
}

/// `https://rolesanywhere.<region>.<dns>` for a partition (`-fips` with `fips`).
pub fn default_endpoint(partition: &str, region: &str, fips: bool) -> Result<String, String> {
    let lookup = if partition == "aws-us-gov" {
        "aws"
    } else {
        partition
    };
    let dns = crate::host::SUFFIXES
        .iter()
        .find(|s| s.partition == lookup && !s.dual_stack)
        .map(|s| s.dns)
        .ok_or_else(|| format!("the trust anchor's partition {partition} is not one this provider knows; set AWS_ENDPOINT_URL_ROLESANYWHERE"))?;
    let service = if fips {
        "rolesanywhere-fips"
    } else {
        "rolesanywhere"
    };
    Ok(format!("https://{service}.{region}.{dns}"))
}

/// A 4xx (or a 429 that outlasted the retries) as one line: status, exception, the service's
/// message (folded onto one line and cut short), and what to check.
fn refusal(status: u16, header_code: Option<&str>, body: &[u8]) -> String {
    let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let field = |names: &[&str]| {
        json.as_ref().and_then(|j| {
            names
                .iter()
                .find_map(|n| j.get(*n).and_then(serde_json::Value::as_str))
                .map(str::to_owned)
        })
    };
    let code = header_code
        .map(|c| c.split(':').next().unwrap_or(c).trim().to_owned())
        .filter(|c| !c.is_empty())
        .or_else(|| {
            field(&["__type", "code", "Code"])
                .map(|c| c.rsplit('#').next().unwrap_or(&c).to_owned())
        })
        .unwrap_or_else(|| "an unnamed error".to_owned());
    let message = field(&["message", "Message"]).map(|m| quote(&m));
    let hint = match code.as_str() {
        "AccessDeniedException" => {
            "check that the trust anchor holds the CA that issued the certificate (and any intermediates are given), that the profile is enabled and lists the role, that the role's trust policy trusts rolesanywhere.amazonaws.com (sts:AssumeRole, sts:TagSession, sts:SetSourceIdentity) with conditions the certificate meets, that the certificate is not revoked, and the node's clock"
        }
        "ValidationException" => {
            "check the ARNs and the session duration (at most the profile's durationSeconds)"
        }
        "ResourceNotFoundException" => {
            "check that the trust anchor and profile exist and are enabled in that region"
        }
        "ThrottlingException" | "TooManyRequestsException" => {
            "CreateSession is throttled: cache the token (CREDENTIAL_PROVIDER_TOKEN_CACHE_DIR) or lengthen the session"
        }
        _ => "check the trust anchor, profile, role and certificate",
    };
    match message {
        Some(message) => format!("HTTP {status} {code}: {message}; {hint}"),
        None => format!("HTTP {status} {code}; {hint}"),
    }
}

/// A service message, safe for one log line: control characters dropped, at most 300
/// characters, quoted.
fn quote(message: &str) -> String {
    let clean: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(300)
        .collect();
    format!("{clean:?}")
}

/// `credentialSet[0].credentials` of a CreateSession answer. Never quotes the body.
fn parse_answer(body: &[u8]) -> Result<AwsCredentials, String> {
    let json: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| "the answer is not JSON".to_owned())?;
    let credentials = json
        .get("credentialSet")
        .and_then(|s| s.get(0))
        .and_then(|s| s.get("credentials"))
        .ok_or_else(|| "the answer has no credentialSet[0].credentials".to_owned())?;
    let text = |name: &str| {
        credentials
            .get(name)
            .and_then(serde_json::Value::as_str)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("credentialSet[0].credentials.{name} is missing"))
    };
    let access_key = text("accessKeyId")?;
    let secret = text("secretAccessKey")?;
    let token = text("sessionToken")?;
    kcp_kubelet::secret::remember(secret);
    kcp_kubelet::secret::remember(token);
    let expiration = match credentials.get("expiration") {
        Some(serde_json::Value::String(s)) => kcp_plugin::time::parse_rfc3339(s),
        Some(serde_json::Value::Number(n)) => n.as_i64().and_then(kcp_plugin::time::from_unix_secs),
        _ => None,
    }
    .ok_or_else(|| "credentialSet[0].credentials.expiration is missing or not a time".to_owned())?;
    Ok(AwsCredentials::new(
        access_key,
        secret,
        Some(token.to_owned()),
        Some(expiration),
        "IamRolesAnywhere",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_endpoints_follow_the_partition() {
        for (partition, region, fips, url) in [
            (
                "aws",
                "eu-west-1",
                false,
                "https://rolesanywhere.eu-west-1.amazonaws.com",
            ),
            (
                "aws",
                "us-east-1",
                true,
                "https://rolesanywhere-fips.us-east-1.amazonaws.com",
            ),
            (
                "aws-cn",
                "cn-north-1",
                false,
                "https://rolesanywhere.cn-north-1.amazonaws.com.cn",
            ),
            (
                "aws-us-gov",
                "us-gov-west-1",
                true,
                "https://rolesanywhere-fips.us-gov-west-1.amazonaws.com",
            ),
        ] {
            assert_eq!(default_endpoint(partition, region, fips).unwrap(), url);
        }
        assert!(default_endpoint("aws-mars", "mars-1", false).is_err());
    }

    #[test]
    fn refusals_name_the_exception_and_quote_the_message_on_one_line() {
        let line = refusal(
            403,
            Some("AccessDeniedException:http://internal.amazon.com/"),
            b"{\"message\":\"Untrusted\\ncertificate\"}",
        );
        assert!(line.starts_with("HTTP 403 AccessDeniedException: \"Untrusted certificate\"; check that the trust anchor"), "{line}");
        let line = refusal(
            400,
            None,
            b"{\"__type\":\"com.amazon#ValidationException\",\"Message\":\"bad\"}",
        );
        assert!(
            line.starts_with("HTTP 400 ValidationException: \"bad\"; check the ARNs"),
            "{line}"
        );
        assert!(refusal(404, None, b"<html>").starts_with("HTTP 404 an unnamed error; "));
    }

    #[test]
    fn answers_without_credentials_are_refused_without_quoting_them() {
        for body in [&b"nope"[..], b"{}", b"{\"credentialSet\":[]}", b"{\"credentialSet\":[{\"credentials\":{\"accessKeyId\":\"AK\",\"secretAccessKey\":\"s3cr3t-value\",\"sessionToken\":\"tok\"}}]}"] {
            let e = parse_answer(body).unwrap_err();
            assert!(!e.contains("s3cr3t"), "{e}");
        }
        let ok = parse_answer(b"{\"credentialSet\":[{\"credentials\":{\"accessKeyId\":\"AK\",\"secretAccessKey\":\"s\",\"sessionToken\":\"t\",\"expiration\":\"2026-11-28T12:00:00Z\"}}]}").unwrap();
        assert_eq!(ok.access_key_id(), "AK");
        assert_eq!(
            ok.expiry().map(super::super::cert::rfc3339).as_deref(),
            Some("2026-11-28T12:00:00Z")
        );
    }
}
