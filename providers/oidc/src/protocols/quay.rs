//! `quay-robot`: Quay's robot account federation (quay.io, and Quay 3.15 and later).
//!
//! One `GET <endpoint>/oauth2/federation/robot/token` with HTTP Basic authentication: the robot
//! account (`<org>+<robot>`) as the user and the service-account token as the password. The
//! answer's `token` is the password for the robot account, for the token's own JWT `exp`. The
//! robot account is the entry's `robotAccount`, or the value of a service-account annotation
//! (`robotAccountAnnotation`, default `quay.io/federated-robot-account`) the kubelet passes.

use base64::Engine;
use kcp_oidc_registries::{QuayRobot, RobotSource};
use reqwest::Method;

use super::vendor::{self, VendorCall};
use super::{Exchange, Issued};
use crate::error::ProtocolError;

/// The federation endpoint, under the registry's URL.
pub const TOKEN_PATH: [&str; 4] = ["oauth2", "federation", "robot", "token"];

/// What to check when Quay refuses.
const HINT: &str = "check the robot account's federation in Quay (issuer: the cluster's service-account issuer; subject: system:serviceaccount:<namespace>:<name>) and that the robot account exists";

/// Trades the service-account token for a robot account token.
pub(crate) async fn exchange(
    x: &Exchange<'_>,
    settings: &QuayRobot,
) -> Result<Issued, ProtocolError> {
    let robot = robot_account(x, settings)?;
    let url = vendor::join(super::endpoint(x)?, &TOKEN_PATH)?;
    // RFC 7617: user and password joined by ':' as they are, then base64.
    let credentials = format!("{robot}:{}", x.sa_token.expose());
    let authorization = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(credentials)
    );
    let (token, _) = vendor::token_call(
        x,
        VendorCall {
            method: Method::GET,
            url: &url,
            headers: &[
                ("Authorization", &authorization),
                ("Accept", "application/json"),
            ],
            body: None,
            what: "Quay robot federation",
            field: "token",
            hint: HINT,
        },
    )
    .await?;
    Ok(Issued::from_token(robot, token))
}

/// The robot account for this pod: the entry's, or its service account's annotation.
fn robot_account(x: &Exchange<'_>, settings: &QuayRobot) -> Result<String, ProtocolError> {
    let (robot, from) = match settings.robot_source() {
        RobotSource::Fixed(robot) => (robot, "robotAccount".to_owned()),
        RobotSource::Annotation(key) => match x.annotations.get(key) {
            Some(robot) => (
                robot.as_str(),
                format!("the service-account annotation {key:?}"),
            ),
            None => {
                return Err(ProtocolError::Input(format!(
                    "the pod's service account has no annotation {key:?}, which names the Quay robot account (<org>+<robot>) for this entry: annotate the service account, \
                     and list {key:?} in tokenAttributes.requiredServiceAccountAnnotationKeys of this provider's CredentialProviderConfig entry so the kubelet passes it \
                     (or set robotAccount in the entry); nothing was sent"
                )));
            }
        },
    };
    let robot = robot.trim();
    if !QuayRobot::is_robot_account(robot) {
        let shown: String = robot.chars().take(100).collect();
        return Err(ProtocolError::Input(format!(
            "the Quay robot account {shown:?} from {from} is not <org>+<robot> (without ':' or spaces); nothing was sent"
        )));
    }
    Ok(robot.to_owned())
}
