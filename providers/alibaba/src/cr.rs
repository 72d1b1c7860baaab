//! Container Registry's calls: the registry login of an Enterprise instance or of the Personal
//! Edition, and `ListInstance` to find an instance's ID from its name.
//!
//! - Enterprise: `GetAuthorizationToken` 2018-12-01, RPC (`POST /`, `InstanceId`); a 200 may
//!   still say it failed (`IsSuccess: false`, `Code`), which is an error quoting the code.
//! - Personal Edition: `GetAuthorizationToken` 2016-06-07, ROA (`GET /tokens`), the login under
//!   `data`.
//! - `ListInstance` 2018-12-01 (`PageNo`, `PageSize`, `InstanceName`): the server matches the
//!   name loosely, so the name is compared exactly here, page after page.
//!
//! Nothing about a login is assumed: the user name and the expiry come from the answer, and an
//! answer without them is [`ApiError::Malformed`] naming the field. The parsers are pure
//! functions of the body and the time of receipt, which the fuzz bodies drive.

use std::time::SystemTime;

use kcp_kubelet::secret::Secret;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::HttpClient;
use serde_json::{Map, Value};
use url::Url;

use crate::api::{self, ApiCall, ApiError};
use crate::credentials::AccessKey;

/// The Enterprise Edition's API version.
pub const ENTERPRISE_VERSION: &str = "2018-12-01";
/// The Personal Edition's API version.
pub const PERSONAL_VERSION: &str = "2016-06-07";

/// Instances asked for per `ListInstance` page.
pub const PAGE_SIZE: u32 = 50;
/// Most `ListInstance` pages read for one name: 1000 instances that loosely match it. A server
/// that keeps answering past that is not believed, rather than looped on until the deadline.
pub const MAX_PAGES: u32 = 20;

/// What the Enterprise login answer is called in errors.
pub const ENTERPRISE_WHAT: &str = "cr GetAuthorizationToken";
/// What the Personal Edition login answer is called in errors.
pub const PERSONAL_WHAT: &str = "cr GetAuthorizationToken (Personal Edition)";
/// What a `ListInstance` answer is called in errors.
pub const LIST_WHAT: &str = "cr ListInstance";

/// A registry login as Container Registry hands it out.
#[derive(Debug, Clone)]
pub struct RegistryLogin {
    /// `TempUsername` / `tempUserName`.
    pub username: String,
    /// `AuthorizationToken` / `authorizationToken`.
    pub password: Secret,
    /// `ExpireTime` / `expireDate` (milliseconds since the epoch in the answer), by the
    /// registry's clock; possibly already past (the answer then caches for no time).
    pub expires_at: SystemTime,
    /// The registry's clock when it answered (its `Date` header), which moves `expires_at` onto
    /// the node's clock (`RegistryToken::with_issuer_clock`).
    pub issuer_now: Option<SystemTime>,
}

/// An Enterprise Edition instance as `ListInstance` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// `InstanceId` (`cri-…`).
    pub id: String,
    /// `InstanceName`.
    pub name: String,
    /// `RegionId`: the region whose `cr` endpoint answers for the instance.
    pub region: String,
}

/// One `ListInstance` page: the instances on it and the total the server claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstancePage {
    /// `TotalCount` (a number or a numeric string), when sent.
    pub total: Option<u64>,
    /// How many entries the page held, named or not.
    pub entries: usize,
    /// The instance named exactly as asked, if on this page.
    pub found: Option<Instance>,
}

/// `GetAuthorizationToken` (2018-12-01) for the Enterprise instance `instance_id`.
pub async fn enterprise_login(
    http: &HttpClient,
    endpoint: &Url,
    key: &AccessKey,
    instance_id: &str,
    deadline: Deadline,
) -> Result<RegistryLogin, ApiError> {
    let what = format!("{ENTERPRISE_WHAT} for instance {instance_id}");
    let call = ApiCall {
        endpoint,
        method: "POST",
        path: "/",
        action: "GetAuthorizationToken",
        version: ENTERPRISE_VERSION,
        query: &[("InstanceId", instance_id)],
        form: &[],
        what: &what,
    };
    let answer = api::send(http, &call, Some(key), deadline)
        .await
        .map_err(|e| e.with_hint(hint))?;
    let login =
        parse_enterprise_login(&answer.body).map_err(|e| e.with_what(&what).with_hint(hint))?;
    Ok(RegistryLogin {
        issuer_now: answer.date(),
        ..login
    })
}

/// The Personal Edition's `GetAuthorizationToken` (2016-06-07, `GET /tokens`).
pub async fn personal_login(
    http: &HttpClient,
    endpoint: &Url,
    key: &AccessKey,
    deadline: Deadline,
) -> Result<RegistryLogin, ApiError> {
    let call = ApiCall {
        endpoint,
        method: "GET",
        path: "/tokens",
        action: "GetAuthorizationToken",
        version: PERSONAL_VERSION,
        query: &[],
        form: &[],
        what: PERSONAL_WHAT,
    };
    let answer = api::send(http, &call, Some(key), deadline)
        .await
        .map_err(|e| e.with_hint(hint))?;
    let login = parse_personal_login(&answer.body)?;
    Ok(RegistryLogin {
        issuer_now: answer.date(),
        ..login
    })
}

/// The Enterprise instance named exactly `name` (`ListInstance` 2018-12-01, every page), or
/// `None` when the account has none of that name in the endpoint's region.
pub async fn find_instance(
    http: &HttpClient,
    endpoint: &Url,
    key: &AccessKey,
    name: &str,
    deadline: Deadline,
) -> Result<Option<Instance>, ApiError> {
    let what = format!("{LIST_WHAT} for the instance name {name}");
    let page_size = PAGE_SIZE.to_string();
    let mut seen: u64 = 0;
    for page_no in 1..=MAX_PAGES {
        let page_no_text = page_no.to_string();
        let call = ApiCall {
            endpoint,
            method: "POST",
            path: "/",
            action: "ListInstance",
            version: ENTERPRISE_VERSION,
            query: &[
                ("InstanceName", name),
                ("PageNo", &page_no_text),
                ("PageSize", &page_size),
            ],
            form: &[],
            what: &what,
        };
        let answer = api::send(http, &call, Some(key), deadline)
            .await
            .map_err(|e| e.with_hint(hint))?;
        let page = parse_instance_page(&answer.body, name)
            .map_err(|e| e.with_what(&what).with_hint(hint))?;
        if page.found.is_some() {
            return Ok(page.found);
        }
        seen += page.entries as u64;
        if page.entries == 0 || page.total.is_some_and(|total| seen >= total) {
            return Ok(None);
        }
    }
    Err(ApiError::Malformed {
        what,
        why: format!(
            "more than {} instances listed for the name: stopped after {MAX_PAGES} pages",
            u64::from(MAX_PAGES) * u64::from(PAGE_SIZE)
        ),
    })
}

/// Parses the Enterprise `GetAuthorizationToken` answer (`{"IsSuccess": true, "Code":
/// "success", "AuthorizationToken", "TempUsername", "ExpireTime": <ms>, "RequestId"}`).
/// `IsSuccess: false` is [`ApiError::Answer`] quoting the code. The issuer's clock is unknown
/// here (`issuer_now` is `None`): the caller has the answer's `Date`.
pub fn parse_enterprise_login(body: &[u8]) -> Result<RegistryLogin, ApiError> {
    let what = ENTERPRISE_WHAT;
    let map = api::json_object(what, body)?;
    let password = api::required_str(&map, what, "AuthorizationToken").map(Secret::new);
    refuse_unsuccessful(&map, what, body)?;
    let password = password?;
    let username = api::required_str(&map, what, "TempUsername")?;
    let expires_at = api::millis(&map, what, "ExpireTime")?;
    Ok(RegistryLogin {
        username: username.trim().to_owned(),
        password,
        expires_at,
        issuer_now: None,
    })
}

/// Parses the Personal Edition's answer (`{"data": {"authorizationToken", "tempUserName",
/// "expireDate": <ms>}}`); `issuer_now` as for [`parse_enterprise_login`].
pub fn parse_personal_login(body: &[u8]) -> Result<RegistryLogin, ApiError> {
    let what = PERSONAL_WHAT;
    let map = api::json_object(what, body)?;
    let data = api::required_object(&map, what, "data")?;
    let password = api::required_str(data, what, "authorizationToken").map(Secret::new)?;
    let username = api::required_str(data, what, "tempUserName")?;
    let expires_at = api::millis(data, what, "expireDate")?;
    Ok(RegistryLogin {
        username: username.trim().to_owned(),
        password,
        expires_at,
        issuer_now: None,
    })
}

/// Parses one `ListInstance` page (`{"IsSuccess", "Code", "PageNo", "PageSize", "TotalCount",
/// "Instances": [{"InstanceId", "InstanceName", "RegionId", "InstanceStatus", …}]}`) looking
/// for the instance named exactly `name` (the server's own filter is loose). Entries named
/// otherwise are only counted; the match must carry a non-empty `InstanceId` and `RegionId`.
pub fn parse_instance_page(body: &[u8], name: &str) -> Result<InstancePage, ApiError> {
    let what = LIST_WHAT;
    let map = api::json_object(what, body)?;
    refuse_unsuccessful(&map, what, body)?;
    let total = match map.get("TotalCount") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            api::whole_number(value)
                .ok_or_else(|| api::malformed(what, "TotalCount", api::NOT_NUMBER))?,
        ),
    };
    let entries = match map.get("Instances") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(items)) => items.as_slice(),
        Some(_) => return Err(api::malformed(what, "Instances", api::NOT_ARRAY)),
    };
    let mut found = None;
    for entry in entries {
        let Value::Object(instance) = entry else {
            return Err(api::malformed(
                what,
                "an entry of Instances",
                api::NOT_OBJECT,
            ));
        };
        if instance.get("InstanceName").and_then(Value::as_str) != Some(name) || found.is_some() {
            continue;
        }
        found = Some(Instance {
            id: api::required_str(instance, what, "InstanceId")?
                .trim()
                .to_owned(),
            name: name.to_owned(),
            region: api::required_str(instance, what, "RegionId")?
                .trim()
                .to_owned(),
        });
    }
    Ok(InstancePage {
        total,
        entries: entries.len(),
        found,
    })
}

/// An error for a 2xx answer that says it failed (`IsSuccess` false, as a boolean or the
/// string `"false"`): the answer's code, message and request ID, as for an error status.
fn refuse_unsuccessful(map: &Map<String, Value>, what: &str, body: &[u8]) -> Result<(), ApiError> {
    let failed = match map.get("IsSuccess") {
        Some(Value::Bool(ok)) => !ok,
        Some(Value::String(s)) => s.eq_ignore_ascii_case("false"),
        _ => false,
    };
    if failed {
        return Err(api::error_answer(what, 200, body).with_hint(hint));
    }
    Ok(())
}

/// What to check for Container Registry's codes.
pub fn hint(code: &str) -> Option<&'static str> {
    let lower = code.to_ascii_lowercase().replace(['_', '.'], "");
    if lower.contains("instancenotexist") || lower.contains("instancenotfound") {
        return Some(
            "no such Enterprise instance in this region: check the instance ID or name and the endpoint's region",
        );
    }
    Some(match code {
        "Forbidden.RAM" | "NoPermission" | "Forbidden" | "Forbidden.AccessDenied" => {
            "the identity needs cr:GetAuthorizationToken (and cr:ListInstance to find instances by name) in a RAM policy"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
