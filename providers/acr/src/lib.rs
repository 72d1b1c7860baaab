//! The library behind `acr-credential-provider`, the kubelet image credential provider for Azure
//! Container Registry (the binary, `src/main.rs`, is its command line).
//!
//! One module per step of a request: [`config`] (`azure.json`), [`cloud`] (which Azure cloud),
//! [`host`] (login servers and mirrors), [`identity`] (whose Entra token; [`annotations`], the
//! service account's say), [`identity_bindings`] (AKS identity bindings), [`azure_arc`] (Azure
//! Arc managed identity; both read their endpoints' [`access_token`] answer), [`transport`] (Azure SDK
//! calls over our HTTP client), [`exchange`] (the registry's challenge and token exchange) and
//! [`provider`] (the request end to end). `fuzz` holds the bodies of the cargo-fuzz targets in
//! `fuzz/` for the parsers of outside input; it is built for cargo-fuzz and unit tests only.

pub mod access_token;
pub mod annotations;
pub mod azure_arc;
pub mod cloud;
pub mod config;
pub mod exchange;
pub mod host;
pub mod identity;
pub mod identity_bindings;
pub mod provider;
pub mod transport;

#[cfg(test)]
mod fuzz_smoke;

/// The bodies of the ACR fuzz targets in `fuzz/fuzz_targets/acr_*.rs`, kept here so that a stable
/// `cargo test` (`providers/acr/src/fuzz_smoke.rs`) runs the same checks over the seed corpus
/// and mutations of it when no nightly toolchain is around. Built only for cargo-fuzz
/// (`--cfg fuzzing`) and unit tests: no release binary has it.
///
/// Each body takes arbitrary bytes and panics when an invariant breaks, not only when the code
/// under test panics: errors are one line and quote no secret, what parses reads back the same.
#[cfg(any(fuzzing, test))]
pub mod fuzz {
    use std::time::{Duration, SystemTime};

    use kcp_kubelet::duration::GoDuration;
    use kcp_plugin::http::HttpResponse;
    use serde_json::Value;

    use crate::config::AzureConfig;
    use crate::exchange::Challenge;
    use crate::host::Suffixes;
    use crate::provider::{self, CACHE_MARGIN, MAX_REFRESH_LIFE};

    /// A fuzz target body: arbitrary bytes in, a panic when an invariant breaks.
    pub type Body = fn(&[u8]);

    /// Every ACR target: its name (the `fuzz/fuzz_targets/<name>.rs` file and `fuzz/corpus/<name>/`
    /// directory, `acr_` and the body's name) and its body.
    pub const TARGETS: &[(&str, Body)] = &[
        ("acr_config", config),
        ("acr_challenge", challenge),
        ("acr_exchange", exchange),
        ("acr_refresh_token", refresh_token),
    ];

    /// The path named in configuration errors.
    const CONFIG_PATH: &str = "/etc/kubernetes/azure.json";
    /// The login server the challenge and exchange bodies talk to.
    const LOGIN_SERVER: &str = "myreg.azurecr.io";

    /// Error texts end up as the single stderr line a plugin prints: never empty, never two lines.
    fn assert_one_line(message: &str, input: &[u8]) {
        assert!(
            !message.is_empty() && !message.contains(['\n', '\r']),
            "message {message:?} for input {input:?} is not one line"
        );
    }

    /// `azure.json` as JSON or YAML ([`AzureConfig::parse`]).
    ///
    /// Invariants: an error is one line naming the file; a configuration written back as JSON
    /// with upstream's field names parses to the same configuration; an empty secret is none.
    pub fn config(data: &[u8]) {
        let text = String::from_utf8_lossy(data);
        let parsed = match AzureConfig::parse(&text, CONFIG_PATH) {
            Ok(parsed) => parsed,
            Err(e) => {
                let message = e.to_string();
                assert_one_line(&message, data);
                assert!(
                    message.starts_with("failed to load config: ") && message.contains(CONFIG_PATH),
                    "{message}"
                );
                return;
            }
        };
        assert!(
            parsed
                .aad_client_secret
                .as_ref()
                .is_none_or(|s| !s.expose().is_empty())
        );
        let written = serde_json::json!({
            "cloud": parsed.cloud,
            "tenantId": parsed.tenant_id,
            "aadClientId": parsed.aad_client_id,
            "aadClientSecret": parsed.aad_client_secret.as_ref().map_or("", |s| s.expose()),
            "useManagedIdentityExtension": parsed.use_managed_identity_extension,
            "userAssignedIdentityID": parsed.user_assigned_identity_id,
            "resourceManagerEndpoint": parsed.resource_manager_endpoint,
            "aadFederatedTokenFile": parsed.aad_federated_token_file,
            "useFederatedWorkloadIdentityExtension": parsed.use_federated_workload_identity_extension,
        });
        match AzureConfig::parse(&written.to_string(), CONFIG_PATH) {
            Ok(again) => assert_eq!(again, parsed, "{written}"),
            Err(e) => panic!("{written} does not parse back: {e}"),
        }
    }

    /// `WWW-Authenticate` values, one per line, from the registry's `/v2/` 401: the `Bearer`
    /// challenge parser, then the realm check against `myreg.azurecr.io`.
    ///
    /// Invariants: errors are one line; a realm that passes is https on the default port, on an
    /// ACR host of the login server's cloud, and the exchange goes to its `/oauth2/exchange`.
    pub fn challenge(data: &[u8]) {
        let text = String::from_utf8_lossy(data);
        let values: Vec<&str> = text
            .split('\n')
            .map(|line| line.trim_end_matches('\r'))
            .collect();
        let found: Challenge = match crate::exchange::parse_bearer(&values) {
            Ok(found) => found,
            Err(e) => return assert_one_line(&e, data),
        };
        assert!(!found.realm.is_empty());
        let suffixes = Suffixes::new([]);
        let Ok(login) = suffixes.classify(LOGIN_SERVER) else {
            panic!("{LOGIN_SERVER} is not a login server");
        };
        match crate::exchange::check_realm(&found, &login, &suffixes) {
            Ok(target) => {
                let url = &target.url;
                assert_eq!(url.scheme(), "https", "{url}");
                assert_eq!(url.port(), None, "{url}");
                assert_eq!(url.path(), "/oauth2/exchange", "{url}");
                assert!(
                    url.username().is_empty() && url.password().is_none(),
                    "{url}"
                );
                assert!(url.query().is_none() && url.fragment().is_none(), "{url}");
                let host = url.host_str().unwrap_or_default();
                assert!(
                    suffixes.same_cloud_acr_host(&login, host),
                    "{host} accepted as a realm of {LOGIN_SERVER}"
                );
                assert!(!target.service.is_empty());
            }
            Err(e) => {
                let message = e.to_string();
                assert_one_line(&message, data);
                assert!(
                    message.starts_with(&format!(
                        "refusing to send an Entra token for {LOGIN_SERVER}"
                    )),
                    "{message}"
                );
            }
        }
    }

    /// The `/oauth2/exchange` answer, written as `STATUS\nname: value\n…\n\nBODY`
    /// ([`crate::exchange::read_exchange_answer`]).
    ///
    /// Invariants: a token comes only from a 200 whose JSON object holds it, non-blank, with
    /// the `Date` header's time; errors are one line naming the call, and the error for a 200
    /// quotes no string of the body.
    pub fn exchange(data: &[u8]) {
        let split = data
            .windows(2)
            .position(|w| w == b"\n\n")
            .map_or((data, &[][..]), |at| (&data[..at], &data[at + 2..]));
        let (head, body) = split;
        let head = String::from_utf8_lossy(head);
        let mut lines = head.split('\n').map(|l| l.trim_end_matches('\r'));
        let status = lines
            .next()
            .and_then(|l| l.trim().parse::<u16>().ok())
            .unwrap_or(200);
        // What an HTTP client hands over: header values are visible ASCII, spaces and tabs.
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
            .filter(|(_, value)| {
                value
                    .bytes()
                    .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
            })
            .collect();
        let response = HttpResponse {
            status,
            body: body.to_vec(),
            headers,
        };
        let what = format!("ACR token exchange at https://{LOGIN_SERVER}/oauth2/exchange");
        match crate::exchange::read_exchange_answer(&response, &what) {
            Ok((token, date)) => {
                assert_eq!(status, 200);
                assert!(!token.expose().trim().is_empty());
                assert_eq!(date, response.date());
                if let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(body) {
                    assert_eq!(
                        object.get("refresh_token").and_then(Value::as_str),
                        Some(token.expose())
                    );
                }
            }
            Err(e) => {
                let message = e.to_string();
                assert_one_line(&message, data);
                assert!(message.starts_with(&what), "{message}");
                if status == 200 {
                    assert_quotes_nothing(&message, &what, &response, body);
                }
            }
        }
    }

    /// The fixed words of the exchange's errors for a 200.
    const ANSWER_ERRORS: &[&str] = &[
        "the answer has no refresh_token",
        "the answer's refresh_token is not a string",
        "the answer is not the expected JSON (not a JSON object",
        "(correlation id ",
    ];

    /// No JSON string of `body` (8 characters or more) is in `message` once the message's own
    /// words (the call, the fixed phrases, the byte count, the correlation ID) are taken out.
    fn assert_quotes_nothing(message: &str, what: &str, response: &HttpResponse, body: &[u8]) {
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            // serde_json's syntax errors carry a position, never content.
            return;
        };
        let mut strings = Vec::new();
        strings_of(&value, &mut strings);
        let bytes = format!("; {} bytes)", body.len());
        let correlation = response
            .header("x-ms-correlation-request-id")
            .map(|id| id.chars().take(64).collect::<String>())
            .unwrap_or_default();
        let own_words = [what, bytes.as_str(), correlation.as_str()];
        let rest = without(message, ANSWER_ERRORS.iter().copied().chain(own_words));
        for quoted in strings {
            assert!(
                quoted.chars().count() < 8 || !rest.contains(&quoted),
                "{message} quotes {quoted:?} from the body"
            );
        }
    }

    /// `message` with every one of `words` cut out (a NUL where each was, so that the pieces
    /// left do not join into new text).
    fn without<'a>(message: &str, words: impl IntoIterator<Item = &'a str>) -> String {
        let mut rest = message.to_owned();
        for word in words.into_iter().filter(|w| !w.is_empty()) {
            rest = rest.replace(word, "\0");
        }
        rest
    }

    /// Every string value (not keys) in a JSON value.
    fn strings_of(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|v| strings_of(v, out)),
            Value::Object(map) => map.values().for_each(|v| strings_of(v, out)),
            _ => {}
        }
    }

    /// A refresh token's expiry: `DATE\nCLAIMS`, the registry's `Date` header and the JSON
    /// claims of the token it handed out (the whole input is also tried as a token).
    ///
    /// Invariants: the life counted is never longer than [`MAX_REFRESH_LIFE`] and never longer
    /// than `exp` says; `cacheDuration` lies between zero and that life minus the margin, and is
    /// upstream's fixed hour exactly when no expiry is known.
    pub fn refresh_token(data: &[u8]) {
        let text = String::from_utf8_lossy(data);
        let (date, claims) = text.split_once('\n').unwrap_or(("", &text));
        let registry_now = kcp_plugin::time::parse_http_date(date);
        let encode = |s: &str| {
            use base64::Engine;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
        };
        let tokens = [
            format!("{}.{}.sig", encode(r#"{"alg":"RS256"}"#), encode(claims)),
            text.to_string(),
        ];
        for token in tokens {
            let exp = kcp_plugin::jwt::expiry(&token);
            let read = provider::refresh_token(kcp_kubelet::Secret::new(token), registry_now);
            let obtained = read.obtained_at;
            assert_eq!(read.expires_at.is_some(), exp.is_some());
            if let (Some(expires_at), Some(exp)) = (read.expires_at, exp) {
                assert!(
                    expires_at <= exp.max(obtained),
                    "{expires_at:?} after exp {exp:?}"
                );
                let life = expires_at
                    .duration_since(obtained)
                    .unwrap_or(Duration::ZERO);
                assert!(life <= MAX_REFRESH_LIFE, "{life:?} of life");
            }
            let duration = provider::cache_duration(read.expires_at, obtained);
            let longest = GoDuration::from_std(MAX_REFRESH_LIFE - CACHE_MARGIN);
            assert!(
                duration >= GoDuration::ZERO && duration <= longest,
                "cacheDuration {duration}"
            );
            if read.expires_at.is_none() {
                assert_eq!(duration, GoDuration::from_std(provider::FALLBACK_CACHE));
            }
            assert!(obtained <= SystemTime::now());
        }
    }
}
