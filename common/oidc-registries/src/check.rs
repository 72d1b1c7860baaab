//! The registries file's rules beyond its types: field kinds, host globs the kubelet can match,
//! each protocol's required combinations, and entries that shadow each other.

use kcp_kubelet::matching::{self, MatchOutcome, Side};
use serde_json::{Map, Value};

use kcp_kubelet::yaml11::kind_of;

use crate::{Protocol, QuayRobot, Registry};

/// Every field of an entry is a string (all settings are): a number or a list is refused with
/// the field named, before serde's messages, which do not name it.
pub(crate) fn string_fields(map: &Map<String, Value>) -> Vec<String> {
    map.iter()
        .filter(|(_, v)| !matches!(v, Value::String(_)))
        .map(|(k, v)| format!("field {k:?} must be a string, got {}", kind_of(v)))
        .collect()
}

/// A host glob as a `matchImages` entry the kubelet accepts and can match: `host[:port]`, no
/// scheme, no path.
pub(crate) fn host(host: &str) -> Option<String> {
    if host.is_empty() {
        return Some(
            "missing field \"host\": the registry host (a matchImages-style glob such as quay.io or *.jfrog.io)"
                .to_owned(),
        );
    }
    if host.contains("://") {
        return Some(format!(
            "host {host:?} has a scheme: write the registry host alone, e.g. quay.io"
        ));
    }
    if host.contains('/') {
        return Some(format!(
            "host {host:?} has a path: write the registry host alone (host[:port]); the entry answers every image on it"
        ));
    }
    if host.trim() != host || host.contains(char::is_whitespace) {
        return Some(format!("host {host:?} contains whitespace"));
    }
    match matching::explain(host, host) {
        MatchOutcome::Unparsable {
            which: Side::Pattern,
            reason,
        } => Some(format!(
            "host {host:?} is not a valid matchImages pattern: {reason}"
        )),
        MatchOutcome::BadGlob { pattern_label } => Some(format!(
            "host {host:?}: label {pattern_label:?} is a malformed glob, so it would never match"
        )),
        _ => None,
    }
}

/// One entry's rules: no empty strings, and each protocol's required combinations.
pub(crate) fn entry(registry: &Registry) -> Vec<String> {
    let mut problems = Vec::new();
    let mut non_empty = |name: &str, value: Option<&str>| {
        if let Some(v) = value
            && v.trim().is_empty()
        {
            problems.push(format!("field {name:?} is empty"));
        }
    };
    match &registry.protocol {
        Protocol::Passthrough(p) => non_empty("username", Some(&p.username)),
        Protocol::TokenExchange(t) => {
            non_empty("username", Some(&t.username));
            non_empty("audience", t.audience.as_deref());
            non_empty("scope", t.scope.as_deref());
            non_empty("resource", t.resource.as_deref());
            non_empty("requestedTokenType", t.requested_token_type.as_deref());
            non_empty("subjectTokenType", t.subject_token_type.as_deref());
            non_empty("clientId", t.client_id.as_deref());
            non_empty("clientSecretFile", t.client_secret_file.as_deref());
        }
        Protocol::Jfrog(j) => {
            non_empty("providerName", Some(&j.provider_name));
            non_empty("providerType", j.provider_type.as_deref());
            non_empty("audience", j.audience.as_deref());
            non_empty("projectKey", j.project_key.as_deref());
            non_empty("identityMappingName", j.identity_mapping_name.as_deref());
            non_empty("username", j.username.as_deref());
        }
        Protocol::QuayRobot(q) => {
            non_empty("robotAccount", q.robot_account.as_deref());
            non_empty(
                "robotAccountAnnotation",
                q.robot_account_annotation.as_deref(),
            );
        }
        Protocol::Cloudsmith(c) => {
            non_empty("organization", Some(&c.organization));
            non_empty("serviceSlug", Some(&c.service_slug));
            non_empty("username", c.username.as_deref());
        }
        Protocol::Chainguard(c) => {
            non_empty("identity", Some(&c.identity));
            non_empty("audience", c.audience.as_deref());
            non_empty("username", c.username.as_deref());
        }
        Protocol::IbmIam(i) => {
            let (_, field, value) = i.profile.parameter();
            non_empty(field, Some(value));
        }
    }
    match &registry.protocol {
        Protocol::Passthrough(_) if registry.endpoint.is_some() => problems.push(
            "field \"endpoint\" is not used by passthrough, which sends no request: remove it"
                .to_owned(),
        ),
        Protocol::TokenExchange(_) if registry.endpoint.is_none() => problems.push(
            "missing field \"endpoint\": token-exchange needs the token endpoint's URL".to_owned(),
        ),
        Protocol::TokenExchange(t) if t.client_secret_file.is_some() && t.client_id.is_none() => {
            problems.push(
                "field \"clientSecretFile\" needs \"clientId\" (the client the secret belongs to)"
                    .to_owned(),
            )
        }
        Protocol::QuayRobot(q)
            if q.robot_account.is_some() && q.robot_account_annotation.is_some() =>
        {
            problems.push(
                "set either \"robotAccount\" or \"robotAccountAnnotation\", not both".to_owned(),
            )
        }
        Protocol::QuayRobot(q)
            if q
                .robot_account
                .as_deref()
                .is_some_and(|r| !r.trim().is_empty() && !QuayRobot::is_robot_account(r.trim())) =>
        {
            problems.push(
                "field \"robotAccount\" is not a Quay robot account: <org>+<robot>, without ':' or spaces"
                    .to_owned(),
            )
        }
        _ => {}
    }
    problems
}

/// Rules across entries: one entry per host.
pub(crate) fn across_entries(registries: &[Registry]) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, r) in registries.iter().enumerate() {
        if let Some(j) = registries[..i]
            .iter()
            .position(|earlier| earlier.host.eq_ignore_ascii_case(&r.host))
        {
            problems.push(format!(
                "registries[{i}] (host {:?}) repeats the host of registries[{j}]: one entry per host",
                r.host
            ));
        }
    }
    problems
}
