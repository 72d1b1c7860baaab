//! The registry side of the token flow: the `/v2/` challenge, the realm check, and the
//! `/oauth2/exchange` call that turns an Entra token into an ACR refresh token.
//!
//! ```text
//! GET  https://<login>/v2/                 -> 401, WWW-Authenticate: Bearer realm="https://<login>/oauth2/token",service="<login>"
//! POST https://<realm host>/oauth2/exchange   grant_type=access_token&service=<service>[&tenant=<tenant>]&access_token=<entra token>
//!                                          -> 200 {"refresh_token":"<ACR JWT>"}
//! ```
//!
//! Fixes over upstream: the realm must be https on the default port, and its host the login server
//! itself or another ACR host of the same cloud, before the Entra token goes anywhere (upstream
//! posts it to whatever host the realm names); the modern `access_token` grant sends the token
//! once; the challenge parser follows RFC 7235 and cannot panic; both calls are retried on
//! transient failures (upstream never retries them); ACR's error codes and correlation IDs reach
//! the error line; an answer without a refresh token is an error, not an empty password.

use std::cell::Cell;
use std::time::Duration;

use kcp_kubelet::Secret;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{HttpClient, HttpError, HttpResponse, Route};
use kcp_plugin::retry::{Retry, RetryPolicy, retry};
use reqwest::{Method, Url};

use crate::host::{LoginServer, Suffixes};
use crate::transport::{USER_AGENT, error_text, header_values};

/// Longest `Retry-After` we wait for.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(5);
/// Retries for the registry calls: three attempts, short jittered waits.
const POLICY: RetryPolicy = RetryPolicy {
    max_attempts: 3,
    base_delay: Duration::from_millis(200),
    max_delay: Duration::from_secs(2),
};

/// A parsed `Bearer` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The token endpoint the registry names.
    pub realm: String,
    /// The service to ask a token for.
    pub service: Option<String>,
}

/// Where and how to exchange, once the realm passed the check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExchangeTarget {
    /// `https://<realm host>/oauth2/exchange`.
    pub url: Url,
    /// The `service` form field.
    pub service: String,
}

/// Asks `login` for its token challenge and checks the realm. No secret is involved yet.
pub async fn discover(
    http: &HttpClient,
    login: &LoginServer,
    suffixes: &Suffixes,
    deadline: Deadline,
) -> anyhow::Result<ExchangeTarget> {
    let url = Url::parse(&format!("https://{}/v2/", login.host))
        .map_err(|e| anyhow::anyhow!("login server {} gives no valid URL: {e}", login.host))?;
    let what = format!(
        "GET https://{}/v2/ (the registry's token challenge)",
        login.host
    );
    // Per call: the shared client's request timeout (15 s), capped by the deadline.
    let response = with_retries(&what, deadline, || {
        http.fetch(
            Route::Internet,
            Method::GET,
            &url,
            &[("user-agent", USER_AGENT)],
            None,
            deadline,
        )
    })
    .await?;
    if response.status != 401 {
        anyhow::bail!(
            "{what}: expected HTTP 401 with a Bearer challenge, got HTTP {}{}",
            response.status,
            acr_error_detail(&response)
        );
    }
    let values = header_values(&response, "www-authenticate");
    let challenge = parse_bearer(&values).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
    check_realm(&challenge, login, suffixes)
}

/// Checks the realm of `challenge` against `login` and returns where to exchange.
pub fn check_realm(
    challenge: &Challenge,
    login: &LoginServer,
    suffixes: &Suffixes,
) -> anyhow::Result<ExchangeTarget> {
    let refuse = |why: &str| {
        anyhow::anyhow!(
            "refusing to send an Entra token for {}: its /v2/ challenge names the realm {:?}, which {why}; \
             a genuine registry names https://{}/oauth2/token (or another ACR host under .{}): check DNS, HTTPS_PROXY and the image host",
            login.host,
            challenge.realm,
            login.host,
            login.suffix
        )
    };
    let realm = Url::parse(&challenge.realm).map_err(|_| refuse("is not a URL"))?;
    if realm.scheme() != "https" {
        return Err(refuse("is not https"));
    }
    if !realm.username().is_empty() || realm.password().is_some() {
        return Err(refuse("carries user information"));
    }
    if realm.port().is_some_and(|p| p != 443) {
        return Err(refuse("is not on the default https port"));
    }
    let host = match realm.host() {
        Some(url::Host::Domain(host)) => host.to_ascii_lowercase(),
        _ => return Err(refuse("has no DNS host")),
    };
    if !suffixes.same_cloud_acr_host(login, &host) {
        return Err(refuse(
            "is neither this login server nor an ACR host of the same cloud",
        ));
    }
    let url = Url::parse(&format!("https://{host}/oauth2/exchange"))
        .map_err(|_| refuse("gives no exchange URL"))?;
    let service = challenge
        .service
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| login.host.clone());
    Ok(ExchangeTarget { url, service })
}

/// Exchanges an Entra access token for an ACR refresh token. Also returns the answer's `Date`
/// header: the token's `exp` is written by the registry's clock, not the node's.
pub async fn exchange(
    http: &HttpClient,
    target: &ExchangeTarget,
    entra_token: &Secret,
    tenant: Option<&str>,
    deadline: Deadline,
) -> anyhow::Result<(Secret, Option<String>)> {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("grant_type", "access_token");
    form.append_pair("service", &target.service);
    if let Some(tenant) = tenant.filter(|t| !t.is_empty()) {
        form.append_pair("tenant", tenant);
    }
    form.append_pair("access_token", entra_token.expose());
    let body = form.finish();
    let what = format!("ACR token exchange at {}", target.url);
    let headers = [
        ("user-agent", USER_AGENT),
        ("content-type", "application/x-www-form-urlencoded"),
    ];
    // The body holds the Entra token; the shared client never logs bodies or headers.
    let response = with_retries(&what, deadline, || {
        http.fetch(
            Route::Internet,
            Method::POST,
            &target.url,
            &headers,
            Some(body.clone().into_bytes()),
            deadline,
        )
    })
    .await?;
    if response.status != 200 {
        let hint = match response.status {
            401 | 403 => {
                "; the identity needs the AcrPull role on this registry (and the token must be for the registry's tenant)"
            }
            400 => "; check tenantId and the token scope",
            _ => "",
        };
        anyhow::bail!(
            "{what} answered HTTP {}{}{hint}",
            response.status,
            acr_error_detail(&response)
        );
    }
    #[derive(serde::Deserialize)]
    struct Answer {
        #[serde(default)]
        refresh_token: Option<String>,
    }
    let answer: Answer = serde_json::from_slice(&response.body).map_err(|e| {
        // Do not echo the body: a half-valid answer may still hold a token.
        anyhow::anyhow!(
            "{what}: the answer is not the expected JSON ({e}; {} bytes){}",
            response.body.len(),
            correlation(&response)
        )
    })?;
    match answer.refresh_token.filter(|t| !t.trim().is_empty()) {
        Some(token) => Ok((
            Secret::new(token),
            response.header("date").map(str::to_owned),
        )),
        None => anyhow::bail!(
            "{what}: the answer has no refresh_token{}",
            correlation(&response)
        ),
    }
}

/// Runs `call` until it yields a response that is not worth retrying, honouring `Retry-After`
/// (up to [`MAX_RETRY_AFTER`]) and the deadline. Transient: 408, 429, 5xx, connection errors,
/// timeouts and unreadable answers; not an untrusted certificate or a spent deadline.
///
/// Not `HttpClient::send_retrying`: the challenge's answer is a 401 we need, ACR's 429s carry a
/// `Retry-After` worth honouring, and 408 is transient here. The loop itself is the shared one.
async fn with_retries<F, Fut>(
    what: &str,
    deadline: Deadline,
    mut call: F,
) -> anyhow::Result<HttpResponse>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<HttpResponse, HttpError>>,
{
    /// An attempt worth another try: an answer with a transient status, or a failure.
    enum Again {
        Answer(HttpResponse),
        Failed(HttpError),
    }
    let attempts = Cell::new(0);
    let result = retry(
        POLICY,
        deadline,
        |again: &Again| match again {
            Again::Answer(r) => retry_after(r).map_or(Retry::Transient, Retry::After),
            // An oversized answer is retried as before the shared client; an untrusted
            // certificate is not (the shared client's rule: another try cannot help).
            Again::Failed(e) if e.is_transient() || matches!(e, HttpError::Body { .. }) => {
                Retry::Transient
            }
            Again::Failed(_) => Retry::Permanent,
        },
        |attempt, again, wait| {
            let summary = match again {
                Again::Answer(r) => format!("HTTP {}", r.status),
                Again::Failed(e) => error_text(e),
            };
            tracing::info!(
                attempt,
                wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                "{what}: {summary}; retrying"
            );
        },
        |attempt| {
            attempts.set(attempt);
            let answer = call();
            async move {
                match answer.await {
                    Ok(r) if r.status == 408 || r.status == 429 || r.status >= 500 => {
                        Err(Again::Answer(r))
                    }
                    Ok(r) => Ok(r),
                    Err(e) => Err(Again::Failed(e)),
                }
            }
        },
    )
    .await;
    match result {
        // A transient status that outlasted the retries is still the answer; callers judge it.
        Ok(response) | Err(Again::Answer(response)) => Ok(response),
        Err(Again::Failed(e)) if attempts.get() > 1 => Err(anyhow::anyhow!(
            "{what}: {} (after {} attempts; check that this node reaches the host on port 443, directly or through HTTPS_PROXY)",
            error_text(&e),
            attempts.get()
        )),
        Err(Again::Failed(e)) => Err(anyhow::anyhow!("{what}: {}", error_text(&e))),
    }
}

/// `Retry-After` in seconds, capped.
fn retry_after(response: &HttpResponse) -> Option<Duration> {
    response
        .header("retry-after")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|s| Duration::from_secs(s).min(MAX_RETRY_AFTER))
}

/// `: CODE: message; correlation id X` from an ACR error answer, for the error line.
fn acr_error_detail(response: &HttpResponse) -> String {
    #[derive(serde::Deserialize)]
    struct Errors {
        #[serde(default)]
        errors: Vec<AcrError>,
    }
    #[derive(serde::Deserialize)]
    struct AcrError {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    let mut out = String::new();
    if let Ok(parsed) = serde_json::from_slice::<Errors>(&response.body) {
        let parts: Vec<String> = parsed
            .errors
            .iter()
            .take(3)
            .map(|e| {
                let text = format!("{}: {}", e.code, e.message);
                kcp_plugin::logging::one_line(&text.chars().take(200).collect::<String>())
            })
            .collect();
        if !parts.is_empty() {
            out = format!(": {}", parts.join("; "));
        }
    }
    out + &correlation(response)
}

fn correlation(response: &HttpResponse) -> String {
    response
        .header("x-ms-correlation-request-id")
        .map(|id| {
            format!(
                " (correlation id {})",
                id.chars().take(64).collect::<String>()
            )
        })
        .unwrap_or_default()
}

/// Finds the `Bearer` challenge among every `WWW-Authenticate` value (RFC 7235: a value may hold
/// several challenges, parameters may be tokens or quoted strings with escapes).
pub fn parse_bearer(values: &[String]) -> Result<Challenge, String> {
    if values.is_empty() {
        return Err("the 401 answer has no WWW-Authenticate header".into());
    }
    let mut schemes = Vec::new();
    for value in values {
        for (scheme, params) in parse_challenges(value) {
            if scheme.eq_ignore_ascii_case("bearer") {
                let get = |name: &str| {
                    params
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(name))
                        .map(|(_, v)| v.clone())
                };
                let realm = get("realm")
                    .filter(|r| !r.is_empty())
                    .ok_or_else(|| "the Bearer challenge has no realm parameter".to_owned())?;
                return Ok(Challenge {
                    realm,
                    service: get("service"),
                });
            }
            schemes.push(scheme);
        }
    }
    Err(format!(
        "WWW-Authenticate offers no Bearer challenge (schemes: {})",
        if schemes.is_empty() {
            "none readable".to_owned()
        } else {
            schemes.join(", ")
        }
    ))
}

/// Splits one header value into `(scheme, params)` challenges. Never panics; junk is skipped.
fn parse_challenges(value: &str) -> Vec<(String, Vec<(String, String)>)> {
    let chars: Vec<char> = value.chars().collect();
    let mut i = 0;
    let mut out: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let skip_ws = |i: &mut usize| {
        while chars.get(*i).is_some_and(|c| *c == ' ' || *c == '\t') {
            *i += 1;
        }
    };
    let read_token = |i: &mut usize| {
        let start = *i;
        while chars.get(*i).is_some_and(|c| is_tchar(*c)) {
            *i += 1;
        }
        chars
            .get(start..*i)
            .map(|s| s.iter().collect::<String>())
            .unwrap_or_default()
    };
    while i < chars.len() {
        skip_ws(&mut i);
        if chars.get(i) == Some(&',') {
            i += 1;
            continue;
        }
        let before = i;
        let token = read_token(&mut i);
        if token.is_empty() {
            // Not a token character: skip it so the loop always advances.
            i = before + 1;
            continue;
        }
        let after_token = i;
        skip_ws(&mut i);
        if chars.get(i) == Some(&'=') && !out.is_empty() {
            // `name=value`: a parameter of the current challenge.
            i += 1;
            skip_ws(&mut i);
            let value = if chars.get(i) == Some(&'"') {
                i += 1;
                let mut v = String::new();
                while let Some(c) = chars.get(i) {
                    i += 1;
                    match c {
                        '"' => break,
                        '\\' => {
                            if let Some(escaped) = chars.get(i) {
                                v.push(*escaped);
                                i += 1;
                            }
                        }
                        other => v.push(*other),
                    }
                }
                v
            } else {
                let v = read_token(&mut i);
                // token68 padding (`abc==`) and other junk up to the next comma.
                while chars.get(i).is_some_and(|c| *c != ',') {
                    i += 1;
                }
                v
            };
            if let Some((_, params)) = out.last_mut() {
                params.push((token, value));
            }
        } else {
            // A new challenge's scheme (a token not followed by `=`).
            i = after_token;
            out.push((token, Vec::new()));
            skip_ws(&mut i);
            // A token68 right after the scheme (`Basic abc==`) is not a parameter: skip it.
            let look = i;
            let t = read_token(&mut i);
            let mut j = i;
            while chars.get(j) == Some(&'=') {
                j += 1;
            }
            let token68 =
                !t.is_empty() && j > i && (j >= chars.len() || chars.get(j) == Some(&','));
            i = if token68 { j } else { look };
        }
    }
    out
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(values: &[&str]) -> Result<Challenge, String> {
        parse_bearer(&values.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn parses_acr_challenges() {
        let c = bearer(&[
            r#"Bearer realm="https://myreg.azurecr.io/oauth2/token",service="myreg.azurecr.io""#,
        ])
        .unwrap();
        assert_eq!(c.realm, "https://myreg.azurecr.io/oauth2/token");
        assert_eq!(c.service.as_deref(), Some("myreg.azurecr.io"));
        // Spaces, case, unquoted values, escapes, other parameters.
        let c = bearer(&[r#"bearer  Realm = "https://a.azurecr.io/x\"y" , service=a.azurecr.io, scope="repository:x:pull""#]).unwrap();
        assert_eq!(c.realm, "https://a.azurecr.io/x\"y");
        assert_eq!(c.service.as_deref(), Some("a.azurecr.io"));
    }

    #[test]
    fn finds_bearer_among_several_challenges() {
        let c = bearer(&[r#"Basic realm="x", Bearer realm="https://r.azurecr.io/oauth2/token",service="r.azurecr.io""#]).unwrap();
        assert_eq!(c.realm, "https://r.azurecr.io/oauth2/token");
        let c = bearer(&[
            "Basic abc==, Bearer realm=\"https://r.azurecr.io/t\"",
            "Negotiate",
        ])
        .unwrap();
        assert_eq!(c.realm, "https://r.azurecr.io/t");
        let c = bearer(&["Negotiate", r#"Bearer realm="https://r.azurecr.io/t""#]).unwrap();
        assert_eq!(c.service, None);
    }

    #[test]
    fn refuses_challenges_without_bearer_or_realm() {
        assert_eq!(
            bearer(&[]).unwrap_err(),
            "the 401 answer has no WWW-Authenticate header"
        );
        assert_eq!(
            bearer(&[r#"Basic realm="Registry""#]).unwrap_err(),
            "WWW-Authenticate offers no Bearer challenge (schemes: Basic)"
        );
        assert_eq!(
            bearer(&[r#"Bearer service="x""#]).unwrap_err(),
            "the Bearer challenge has no realm parameter"
        );
        assert_eq!(
            bearer(&[r#"Bearer realm="""#]).unwrap_err(),
            "the Bearer challenge has no realm parameter"
        );
    }

    /// acr.md §6.3 `parseAssignments` vectors (as parameter lists) and inputs that crash naive parsers.
    #[test]
    fn never_panics_on_junk() {
        for junk in [
            "",
            "Bearer",
            "Bearer ",
            "Bearer =",
            "Bearer ==,,",
            "Bearer realm",
            "Bearer realm=",
            "Bearer realm=\"",
            "Bearer realm=\"\\",
            "=,=,=",
            "\"\"\"",
            "Bearer realm=\"a\",c=\"d\"",
            "Bearer a = \"b\", c =\"d\" ",
            "Bearer a=\"\",c=\"d\" ",
            "Bearer ,,realm=\"x\"",
            "ü Bearer realm=\"ü\"",
            "\t",
            ",",
        ] {
            let _ = bearer(&[junk]);
        }
        let params = parse_challenges(r#"Bearer a = "b", c ="d" "#);
        assert_eq!(
            params,
            vec![(
                "Bearer".to_owned(),
                vec![("a".into(), "b".into()), ("c".into(), "d".into())]
            )]
        );
        let params = parse_challenges(r#"Bearer a="",c="d" "#);
        assert_eq!(
            params,
            vec![(
                "Bearer".to_owned(),
                vec![("a".into(), "".into()), ("c".into(), "d".into())]
            )]
        );
    }

    fn login(host: &str) -> (LoginServer, Suffixes) {
        let s = Suffixes::new([]);
        (s.classify(host).unwrap(), s)
    }

    fn realm(realm: &str) -> anyhow::Result<ExchangeTarget> {
        let (l, s) = login("myreg.azurecr.io");
        check_realm(
            &Challenge {
                realm: realm.into(),
                service: Some("myreg.azurecr.io".into()),
            },
            &l,
            &s,
        )
    }

    #[test]
    fn realm_on_the_login_server_or_same_cloud_acr_host_is_accepted() {
        let t = realm("https://myreg.azurecr.io/oauth2/token").unwrap();
        assert_eq!(t.url.as_str(), "https://myreg.azurecr.io/oauth2/exchange");
        assert_eq!(t.service, "myreg.azurecr.io");
        let t = realm("https://MYREG.azurecr.io:443/oauth2/token?x=1").unwrap();
        assert_eq!(t.url.as_str(), "https://myreg.azurecr.io/oauth2/exchange");
        let t = realm("https://myreg.eastus.geo.azurecr.io/oauth2/token").unwrap();
        assert_eq!(
            t.url.as_str(),
            "https://myreg.eastus.geo.azurecr.io/oauth2/exchange"
        );
    }

    #[test]
    fn realm_elsewhere_is_refused() {
        for (r, why) in [
            (
                "https://evil.example.com/oauth2/token",
                "neither this login server",
            ),
            (
                "https://myreg.azurecr.io.evil.com/oauth2/token",
                "neither this login server",
            ),
            (
                "https://myreg.azurecr.cn/oauth2/token",
                "neither this login server",
            ),
            ("http://myreg.azurecr.io/oauth2/token", "is not https"),
            (
                "https://myreg.azurecr.io:8443/oauth2/token",
                "default https port",
            ),
            (
                "https://user@myreg.azurecr.io/oauth2/token",
                "user information",
            ),
            ("https://127.0.0.1/oauth2/token", "no DNS host"),
            ("/oauth2/token", "is not a URL"),
        ] {
            let e = realm(r).unwrap_err().to_string();
            assert!(e.contains(why), "{r}: {e}");
            assert!(
                e.starts_with("refusing to send an Entra token for myreg.azurecr.io"),
                "{e}"
            );
        }
    }
}
