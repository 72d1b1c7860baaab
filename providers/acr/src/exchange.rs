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

use std::time::{Duration, SystemTime};

use kcp_kubelet::Secret;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::endpoint::UrlError;
use kcp_plugin::http::{Call, HttpClient, HttpResponse, RetryRules, Route, Statuses};
use kcp_plugin::retry::RetryPolicy;
use reqwest::{Method, Url};

use crate::host::{LoginServer, Suffixes};
use crate::transport::USER_AGENT;

/// Longest `Retry-After` we wait for.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(5);
/// Retries of both registry calls: three attempts with short jittered waits; 408, 429 and 5xx are
/// transient and their `Retry-After` is honoured (up to [`MAX_RETRY_AFTER`]); every answer is
/// handed back, the challenge's 401 included, and a transient status that outlasts the retries
/// too: the caller judges it. An oversized answer is retried; an untrusted certificate is not.
const RULES: RetryRules = RetryRules {
    policy: RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(200),
        max_delay: Duration::from_secs(2),
    },
    transient: Statuses(&[(408, 408), (429, 429), (500, u16::MAX)]),
    answers: Statuses::ANY,
    max_retry_after: Some(MAX_RETRY_AFTER),
    retry_body_errors: true,
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
    let call = Call {
        route: Route::Internet,
        method: Method::GET,
        url: &url,
        headers: &[("user-agent", USER_AGENT)],
        body: None,
        what: &what,
    };
    let response = send(http, call, deadline).await?;
    if response.status != 401 {
        anyhow::bail!(
            "{what}: expected HTTP 401 with a Bearer challenge, got HTTP {}{}",
            response.status,
            acr_error_detail(&response)
        );
    }
    let values = response.header_values("www-authenticate");
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
    let realm = kcp_plugin::endpoint::parse_url(&challenge.realm).map_err(|e| match e {
        UrlError::NotAscii => refuse("is not a plain ASCII URL"),
        _ => refuse("is not a URL"),
    })?;
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

/// Exchanges an Entra access token for an ACR refresh token. Also returns the registry's clock
/// when it answered (its `Date`, when readable): the token's `exp` is written by that clock, not
/// the node's.
pub async fn exchange(
    http: &HttpClient,
    target: &ExchangeTarget,
    entra_token: &Secret,
    tenant: Option<&str>,
    deadline: Deadline,
) -> anyhow::Result<(Secret, Option<SystemTime>)> {
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
    let call = Call {
        route: Route::Internet,
        method: Method::POST,
        url: &target.url,
        headers: &headers,
        body: Some(body.as_bytes()),
        what: &what,
    };
    let response = send(http, call, deadline).await?;
    read_exchange_answer(&response, &what)
}

/// Reads the `/oauth2/exchange` answer: the refresh token and the registry's clock (its `Date`,
/// when readable). `what` names the call in errors.
///
/// A non-200 status is an error carrying ACR's error codes and a hint; a 200 must be a JSON
/// object with a non-blank `refresh_token` string. No error quotes the body: a half-valid answer
/// may still hold a token, so the JSON is read as a value first (syntax errors carry only a
/// position; type errors would quote the value).
pub fn read_exchange_answer(
    response: &HttpResponse,
    what: &str,
) -> anyhow::Result<(Secret, Option<SystemTime>)> {
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
            acr_error_detail(response)
        );
    }
    let not_json = |why: String| {
        anyhow::anyhow!(
            "{what}: the answer is not the expected JSON ({why}; {} bytes){}",
            response.body.len(),
            correlation(response)
        )
    };
    let answer: serde_json::Value =
        serde_json::from_slice(&response.body).map_err(|e| not_json(e.to_string()))?;
    let serde_json::Value::Object(answer) = answer else {
        return Err(not_json("not a JSON object".to_owned()));
    };
    match answer.get("refresh_token") {
        Some(serde_json::Value::String(token)) if !token.trim().is_empty() => {
            Ok((Secret::new(token.as_str()), response.date()))
        }
        Some(serde_json::Value::String(_) | serde_json::Value::Null) | None => anyhow::bail!(
            "{what}: the answer has no refresh_token{}",
            correlation(response)
        ),
        Some(_) => anyhow::bail!(
            "{what}: the answer's refresh_token is not a string{}",
            correlation(response)
        ),
    }
}

/// Sends `call` under [`RULES`]; a failure that outlasted them names the call, and after retries
/// what to check.
async fn send(
    http: &HttpClient,
    call: Call<'_>,
    deadline: Deadline,
) -> anyhow::Result<HttpResponse> {
    let what = call.what;
    http.send_retrying_with(call, deadline, &RULES)
        .await
        .map_err(|e| match e.attempts {
            0 | 1 => anyhow::anyhow!("{what}: {}", e.error.describe()),
            attempts => anyhow::anyhow!(
                "{what}: {} (after {attempts} attempts; check that this node reaches the host on port 443, directly or through HTTPS_PROXY)",
                e.error.describe()
            ),
        })
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
pub fn parse_bearer(values: &[&str]) -> Result<Challenge, String> {
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
        parse_bearer(values)
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

    /// docs/providers/acr.md “Test vectors”: `parseAssignments` (as parameter lists), and inputs
    /// that crash naive parsers.
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

    fn answer(status: u16, body: &str, date: Option<&str>) -> HttpResponse {
        let mut headers = vec![(
            "x-ms-correlation-request-id".to_owned(),
            "c0ffee".to_owned(),
        )];
        headers.extend(date.map(|d| ("date".to_owned(), d.to_owned())));
        HttpResponse {
            status,
            body: body.as_bytes().to_vec(),
            headers,
        }
    }

    const WHAT: &str = "ACR token exchange at https://myreg.azurecr.io/oauth2/exchange";

    #[test]
    fn reads_the_refresh_token_and_the_registry_clock() {
        let (token, date) = read_exchange_answer(
            &answer(
                200,
                r#"{"refresh_token":"eyJ.refresh.token"}"#,
                Some("Sun, 06 Nov 1994 08:49:37 GMT"),
            ),
            WHAT,
        )
        .unwrap();
        assert_eq!(token.expose(), "eyJ.refresh.token");
        assert_eq!(date, kcp_plugin::time::from_unix_secs(784_111_777));
        // Dates no calendar or clock holds are unknown, not a panic.
        for bad in [
            "Sun, 06 Nov 99999 08:49:37 GMT",
            "Fri, 31 Dec 9999 23:59:60 GMT",
            "-1",
        ] {
            let (_, date) =
                read_exchange_answer(&answer(200, r#"{"refresh_token":"t"}"#, Some(bad)), WHAT)
                    .unwrap();
            assert!(date.is_none_or(|d| d > SystemTime::UNIX_EPOCH), "{bad}");
        }
        let e = read_exchange_answer(
            &answer(
                401,
                r#"{"errors":[{"code":"UNAUTHORIZED","message":"no\naccess"}]}"#,
                None,
            ),
            WHAT,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            format!(
                "{WHAT} answered HTTP 401: UNAUTHORIZED: no access (correlation id c0ffee); the identity needs the AcrPull role on this registry (and the token must be for the registry's tenant)"
            )
        );
    }

    /// A 200 whose body is not an object holding a `refresh_token` string is a one-line error
    /// that quotes nothing from the body. Before, the body was decoded straight into a struct:
    /// serde's type errors quoted a bare JSON string (`invalid type: string "<token>"`), and a
    /// JSON array was read as the struct's fields (`["<token>"]` was accepted as a token).
    #[test]
    fn odd_answers_are_errors_that_quote_nothing() {
        for (body, want) in [
            (
                r#""eyJ-bare-string-token""#,
                "not the expected JSON (not a JSON object",
            ),
            (
                r#"["eyJ-array-token"]"#,
                "not the expected JSON (not a JSON object",
            ),
            (
                r#"{"refresh_token":["eyJ-nested-token"]}"#,
                "refresh_token is not a string",
            ),
            (
                r#"{"refresh_token":1e300}"#,
                "refresh_token is not a string",
            ),
            (r#"{"refresh_token":-5}"#, "refresh_token is not a string"),
            (r#"{"refresh_token":null}"#, "has no refresh_token"),
            (r#"{"refresh_token":"  "}"#, "has no refresh_token"),
            (
                r#"{"refresh_token":"eyJ-unterminated"#,
                "not the expected JSON (EOF while parsing",
            ),
            ("", "not the expected JSON (EOF while parsing"),
        ] {
            let e = read_exchange_answer(&answer(200, body, None), WHAT)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(WHAT) && e.contains(want), "{body}: {e}");
            assert!(e.ends_with("(correlation id c0ffee)"), "{e}");
            assert!(!e.contains("eyJ") && !e.contains('\n'), "{body}: {e}");
        }
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
        // Percent-encoding outside the host is fine.
        let t = realm("https://myreg.azurecr.io/oauth2/t%6Fken?scope=a%20b").unwrap();
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
            // Used to panic in debug builds (idna_adapter's ASCII-only mapper asserts).
            (
                "https://MYRE\u{e8}.azurecr.io/oauth2/token",
                "is not a plain ASCII URL",
            ),
            (
                "https://MY%EE.azurecr.io/oauth2/token",
                "is not a plain ASCII URL",
            ),
            (
                "https:\\\\MY%41%EE.azurecr.io\\oauth2",
                "is not a plain ASCII URL",
            ),
            (
                "https://myreg.azurecr.io\u{ff0e}evil.com/oauth2/token",
                "is not a plain ASCII URL",
            ),
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
