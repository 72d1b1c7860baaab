//! `validate` and `run`: what an `alibaba-credential-provider` entry needs for a pod's identity
//! (RRSA), beyond its flags. The kubelet accepts these entries and the provider starts with them,
//! but annotated pods then never pull as their role, so each finding is a warning: the
//! service-account token's audience (STS `AssumeRoleWithOIDC` checks it against the RAM OIDC
//! provider's client IDs, `sts.aliyuncs.com` on ACK), the OIDC provider to trade it through, and
//! whether the kubelet forwards the annotation that names the role.

use kcp_kubelet_emulation::config::{Config, Provider};
use kcp_kubelet_emulation::validate::{Finding, Validation};

use crate::argv::provider_setting;

/// The audience RRSA's OIDC providers accept by default (init/defaults.rs `ALIBABA_TOKEN`).
pub const AUDIENCE: &str = "sts.aliyuncs.com";
/// The provider's default `--role-annotation-key`, the annotation ACK's pod identity webhook reads.
pub const ROLE_ANNOTATION: &str = "pod-identity.alibabacloud.com/role-name";
/// The environment twin of `--oidc-provider-arn`.
const OIDC_PROVIDER_ARN_ENV: &str = "ALIBABA_CLOUD_OIDC_PROVIDER_ARN";

/// Whether the entry runs this project's `alibaba-credential-provider`.
fn is_alibaba(p: &Provider) -> bool {
    kcp_provider_args::flags::for_binary(&p.name)
        .is_some_and(|f| f.binary == kcp_provider_args::flags::ALIBABA.binary)
}

/// Adds the warnings about each alibaba entry's service-account mode to `v`.
pub fn check(config: &Config, v: &mut Validation) {
    for p in config.providers.iter().filter(|p| is_alibaba(p)) {
        let Some(ta) = &p.token_attributes else {
            continue;
        };
        let mut warn = |message: String| {
            v.warnings.push(Finding {
                provider: Some(p.name.clone()),
                message,
            });
        };
        if !ta.audience.is_empty() && ta.audience != AUDIENCE {
            warn(format!(
                "tokenAttributes.serviceAccountTokenAudience {:?}: STS AssumeRoleWithOIDC accepts only audiences the RAM OIDC provider lists as client IDs, and RRSA's is {AUDIENCE}; unless you added {:?} there, every annotated pod fails to pull",
                ta.audience, ta.audience
            ));
        }
        if provider_setting(p, "oidc-provider-arn", OIDC_PROVIDER_ARN_ENV)
            .is_none_or(|arn| arn.is_empty())
        {
            warn(format!(
                "tokenAttributes without --oidc-provider-arn (or env {OIDC_PROVIDER_ARN_ENV}): the provider has no RAM OIDC provider to trade a pod's token through, so annotated pods cannot pull as their role"
            ));
        }
        let key = provider_setting(p, "role-annotation-key", "")
            .filter(|k| !k.is_empty())
            .unwrap_or_else(|| ROLE_ANNOTATION.to_owned());
        let forwarded = ta
            .optional_keys
            .iter()
            .chain(&ta.required_keys)
            .any(|k| *k == key);
        if !forwarded {
            warn(format!(
                "tokenAttributes does not forward the annotation {key:?} (add it to optionalServiceAccountAnnotationKeys): the kubelet sends only listed annotations, so the provider never sees a pod's role and every pod pulls as the node"
            ));
        }
    }
}
