//! The protocols a registry entry can use, each with the settings its vendor's exchange needs.
//!
//! `Protocol` is read from the entry's `protocol` field (kebab-case names) and the entry's other
//! fields (camelCase, as Kubernetes spells them); a field a protocol does not know is refused,
//! so a typo cannot silently drop a setting.

use serde::Deserialize;

/// The `subject_token_type` sent by `token-exchange` when the entry names none: the
/// service-account token is a JWT (RFC 8693 §3).
pub const JWT_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:jwt";
/// The service-account annotation `quay-robot` reads the robot account from when the entry
/// names neither `robotAccount` nor `robotAccountAnnotation` (quay-credential-provider's).
pub const QUAY_ROBOT_ANNOTATION: &str = "quay.io/federated-robot-account";
/// Cloudsmith's API, where its OIDC exchange lives.
pub const CLOUDSMITH_ENDPOINT: &str = "https://api.cloudsmith.io";
/// Chainguard's issuer, where its token exchange lives.
pub const CHAINGUARD_ENDPOINT: &str = "https://issuer.enforce.dev";
/// IBM Cloud IAM's public endpoint, where the compute-resource token grant lives.
pub const IBM_IAM_ENDPOINT: &str = "https://iam.cloud.ibm.com";

/// How one registry turns the pod's service-account token into a pull credential.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "protocol", rename_all = "kebab-case")]
pub enum Protocol {
    /// The service-account token itself is the password.
    Passthrough(Passthrough),
    /// An OAuth 2.0 token exchange (RFC 8693) at a token endpoint such as Keycloak's.
    TokenExchange(TokenExchange),
    /// JFrog Artifactory's OIDC integration.
    Jfrog(Jfrog),
    /// Quay's robot account federation.
    QuayRobot(QuayRobot),
    /// Cloudsmith's OIDC service accounts.
    Cloudsmith(Cloudsmith),
    /// Chainguard's assumable identities.
    Chainguard(Chainguard),
    /// IBM Cloud IAM trusted profiles (IBM Cloud Container Registry, `icr.io`).
    IbmIam(IbmIam),
}

impl Protocol {
    /// The name as the registries file spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Protocol::Passthrough(_) => "passthrough",
            Protocol::TokenExchange(_) => "token-exchange",
            Protocol::Jfrog(_) => "jfrog",
            Protocol::QuayRobot(_) => "quay-robot",
            Protocol::Cloudsmith(_) => "cloudsmith",
            Protocol::Chainguard(_) => "chainguard",
            Protocol::IbmIam(_) => "ibm-iam",
        }
    }

    /// Every protocol name, for error messages.
    pub const NAMES: [&'static str; 7] = [
        "passthrough",
        "token-exchange",
        "jfrog",
        "quay-robot",
        "cloudsmith",
        "chainguard",
        "ibm-iam",
    ];
}

/// `passthrough`: the registry verifies the service-account token itself.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Passthrough {
    /// The registry user name sent with the token (`jwt` for Harbor's workload-identity build).
    pub username: String,
}

/// `token-exchange`: RFC 8693 at `endpoint` (required: the token endpoint itself).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenExchange {
    /// The `audience` parameter: which client or service the issued token is for.
    pub audience: Option<String>,
    /// The `scope` parameter.
    pub scope: Option<String>,
    /// The `resource` parameter.
    pub resource: Option<String>,
    /// The `requested_token_type` parameter.
    pub requested_token_type: Option<String>,
    /// The `subject_token_type` parameter; [`JWT_TOKEN_TYPE`] when unset
    /// (see [`TokenExchange::subject_token_type`]).
    pub subject_token_type: Option<String>,
    /// The OAuth client: sent as `client_id`, or with `clientSecretFile` as HTTP Basic
    /// authentication (`client_secret_basic`).
    pub client_id: Option<String>,
    /// A file holding the client's secret, read at every exec; needs `clientId`.
    pub client_secret_file: Option<String>,
    /// The registry user name sent with the issued token.
    pub username: String,
}

impl TokenExchange {
    /// The `subject_token_type` to send.
    pub fn subject_token_type(&self) -> &str {
        self.subject_token_type.as_deref().unwrap_or(JWT_TOKEN_TYPE)
    }
}

/// `jfrog`: Artifactory's OIDC token endpoint (`endpoint` defaults to `https://<image host>`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Jfrog {
    /// The name of the OIDC integration in the JFrog Platform.
    pub provider_name: String,
    /// The integration's provider type (e.g. `Generic`), when the platform needs it.
    pub provider_type: Option<String>,
    /// The audience the integration expects.
    pub audience: Option<String>,
    /// A JFrog project the token is scoped to.
    pub project_key: Option<String>,
    /// The identity mapping to use instead of the platform's choice.
    pub identity_mapping_name: Option<String>,
    /// The registry user name, when the answer does not say it.
    pub username: Option<String>,
}

/// `quay-robot`: Quay's robot account federation (`endpoint` defaults to `https://<image host>`).
/// At most one of `robotAccount` and `robotAccountAnnotation`; with neither, the robot account is
/// read from the service-account annotation [`QUAY_ROBOT_ANNOTATION`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuayRobot {
    /// The robot account, `<org>+<robot>`.
    pub robot_account: Option<String>,
    /// The service-account annotation naming the robot account.
    pub robot_account_annotation: Option<String>,
}

/// Where a `quay-robot` entry's robot account comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RobotSource<'a> {
    /// Named in the registries file.
    Fixed(&'a str),
    /// Read from this service-account annotation of the pod.
    Annotation(&'a str),
}

impl QuayRobot {
    /// Whether `robot` reads as a Quay robot account, `<org>+<robot>`, that can stand as the user
    /// name of HTTP Basic (no `:`, no whitespace or control characters). Checked on the file's
    /// `robotAccount` at load and on an annotation's value before anything is sent.
    pub fn is_robot_account(robot: &str) -> bool {
        robot
            .split_once('+')
            .is_some_and(|(org, name)| !org.is_empty() && !name.is_empty())
            && !robot
                .chars()
                .any(|c| c == ':' || c.is_whitespace() || c.is_control())
    }

    /// Where the robot account comes from (the checks refuse both being set).
    pub fn robot_source(&self) -> RobotSource<'_> {
        match (&self.robot_account, &self.robot_account_annotation) {
            (Some(robot), _) => RobotSource::Fixed(robot),
            (None, Some(annotation)) => RobotSource::Annotation(annotation),
            (None, None) => RobotSource::Annotation(QUAY_ROBOT_ANNOTATION),
        }
    }
}

/// `cloudsmith`: Cloudsmith's OIDC exchange (`endpoint` defaults to [`CLOUDSMITH_ENDPOINT`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cloudsmith {
    /// The organization's slug.
    pub organization: String,
    /// The service account's slug; also the registry user name unless `username` is set.
    pub service_slug: String,
    /// The registry user name, when the service account's slug does not fit.
    pub username: Option<String>,
}

/// `chainguard`: Chainguard's STS (`endpoint` defaults to [`CHAINGUARD_ENDPOINT`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Chainguard {
    /// The assumable identity's id.
    pub identity: String,
    /// The audience asked for; the image's registry host (e.g. `cgr.dev`) when unset.
    pub audience: Option<String>,
    /// The registry user name, when the default does not fit.
    pub username: Option<String>,
}

/// `ibm-iam`: IBM Cloud IAM's compute-resource token grant for a trusted profile (`endpoint`
/// defaults to [`IBM_IAM_ENDPOINT`]). The file names the profile by `profileId` or by
/// `profileName`, exactly one of them; the choice is kept as [`IbmProfile`], so an entry with
/// both or neither cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "IbmIamFields")]
pub struct IbmIam {
    /// The trusted profile the pod's token is traded for.
    pub profile: IbmProfile,
}

/// How an `ibm-iam` entry names its trusted profile; IAM takes either form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IbmProfile {
    /// `profileId`: the profile's id (`Profile-…`), stable across renames.
    Id(String),
    /// `profileName`: the profile's name in the account.
    Name(String),
}

impl IbmProfile {
    /// The IAM form parameter and the registries-file field this profile comes from, and its
    /// value: `("profile_id", "profileId", …)` or `("profile_name", "profileName", …)`.
    pub fn parameter(&self) -> (&'static str, &'static str, &str) {
        match self {
            IbmProfile::Id(id) => ("profile_id", "profileId", id),
            IbmProfile::Name(name) => ("profile_name", "profileName", name),
        }
    }
}

/// The `ibm-iam` fields as written, before the one-profile rule makes an [`IbmIam`] of them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IbmIamFields {
    profile_id: Option<String>,
    profile_name: Option<String>,
}

impl TryFrom<IbmIamFields> for IbmIam {
    type Error = String;

    fn try_from(fields: IbmIamFields) -> Result<IbmIam, String> {
        let profile = match (fields.profile_id, fields.profile_name) {
            (Some(id), None) => IbmProfile::Id(id),
            (None, Some(name)) => IbmProfile::Name(name),
            (Some(_), Some(_)) => {
                return Err(
                    "set either \"profileId\" or \"profileName\" (the trusted profile), not both"
                        .to_owned(),
                );
            }
            (None, None) => {
                return Err(
                    "missing field \"profileId\" or \"profileName\": ibm-iam needs the IAM trusted profile the pods' tokens are traded for (its id, Profile-..., or its name)"
                        .to_owned(),
                );
            }
        };
        Ok(IbmIam { profile })
    }
}
