//! `ibm-iam`: IBM Cloud IAM's compute-resource token grant, for IBM Cloud Container Registry
//! (`icr.io` and its regional hosts).
//!
//! One form-encoded `POST <endpoint>/identity/token`: `grant_type` (the `cr-token` grant),
//! `cr_token` (the pod's service-account token) and the trusted profile as `profile_id` or
//! `profile_name`. The answer's `access_token` is the password for its `expires_in` (IAM also
//! sends `token_type` and `expiration`); the registry user is always `iambearer`, the name IBM
//! Cloud Container Registry takes an IAM access token with. IAM's refusals
//! (`{"errorCode":"BXNIM…","errorMessage":…}`) are quoted by the shared call
//! ([`crate::answer::ibm_error`]) with what to check.

use kcp_oidc_registries::IbmIam;
use reqwest::Method;

use super::vendor::{self, VendorCall};
use super::{Exchange, Issued};
use crate::error::ProtocolError;

/// IAM's token endpoint, under the IAM URL.
pub const TOKEN_PATH: [&str; 2] = ["identity", "token"];
/// IAM's grant for a compute resource's token (the pod's service-account token).
pub const GRANT_TYPE: &str = "urn:ibm:params:oauth:grant-type:cr-token";
/// The registry user name that tells IBM Cloud Container Registry the password is an IAM access
/// token.
pub const USERNAME: &str = "iambearer";

/// What to check when IAM refuses.
const HINT: &str = "check that the trusted profile (profileId or profileName) trusts this compute resource (a link or a Profile-CR rule for the cluster with cr_type IKS_SA or ROKS_SA, the pod's namespace and service account), that IAM can verify the cluster's service-account tokens (IKS and ROKS clusters only), the token's audience, and that the profile may read the registry namespace";

/// Trades the service-account token for an IAM access token of the trusted profile.
pub(crate) async fn exchange(x: &Exchange<'_>, settings: &IbmIam) -> Result<Issued, ProtocolError> {
    let url = vendor::join(super::endpoint(x)?, &TOKEN_PATH)?;
    let (parameter, _, profile) = settings.profile.parameter();
    let body = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("grant_type", GRANT_TYPE)
        .append_pair("cr_token", x.sa_token.expose())
        .append_pair(parameter, profile)
        .finish();
    let (token, _) = vendor::token_call(
        x,
        VendorCall {
            method: Method::POST,
            url: &url,
            headers: &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Accept", "application/json"),
            ],
            body: Some(body.as_bytes()),
            what: "IBM Cloud IAM cr-token exchange",
            field: "access_token",
            hint: HINT,
        },
    )
    .await?;
    Ok(Issued::from_token(USERNAME, token))
}
