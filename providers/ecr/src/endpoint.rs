//! The API endpoint a registry host leads to, resolved with the SDK's own endpoint rules so that
//! what we log (and test) is what the SDK calls.

use aws_sdk_ecr::config::endpoint::{Params as EcrParams, ResolveEndpoint as _};
use aws_sdk_ecrpublic::config::endpoint::{Params as PublicParams, ResolveEndpoint as _};
use aws_sdk_eksauth::config::endpoint::{Params as EksAuthParams, ResolveEndpoint as _};
use aws_sdk_sts::config::endpoint::{Params as StsParams, ResolveEndpoint as _};

use crate::host::RegistryKind;

/// The endpoint URL for the GetAuthorizationToken call on this kind of registry.
pub fn resolve(
    kind: &RegistryKind,
    region: &str,
    fips: bool,
    dual_stack: bool,
) -> Result<String, String> {
    if *kind == RegistryKind::Public {
        let params = PublicParams::builder()
            .region(region)
            .use_fips(fips)
            .use_dual_stack(dual_stack)
            .build()
            .map_err(|e| e.to_string())?;
        futures_now(
            aws_sdk_ecrpublic::config::endpoint::DefaultResolver::new().resolve_endpoint(&params),
        )
    } else {
        let params = EcrParams::builder()
            .region(region)
            .use_fips(fips)
            .use_dual_stack(dual_stack)
            .build()
            .map_err(|e| e.to_string())?;
        futures_now(aws_sdk_ecr::config::endpoint::DefaultResolver::new().resolve_endpoint(&params))
    }
}

/// The STS endpoint for a registry's region and flavour: where `--assume-role` and
/// service-account mode assume roles (the SDK's default, regional endpoints).
pub fn resolve_sts(region: &str, fips: bool, dual_stack: bool) -> Result<String, String> {
    let params = StsParams::builder()
        .region(region)
        .use_fips(fips)
        .use_dual_stack(dual_stack)
        .use_global_endpoint(false)
        .build()
        .map_err(|e| e.to_string())?;
    futures_now(aws_sdk_sts::config::endpoint::DefaultResolver::new().resolve_endpoint(&params))
}

/// The EKS Auth endpoint for a region (Pod Identity): always dual-stack (`eks-auth.<region>.api.aws`
/// and each partition's counterpart), FIPS when the registry's host is.
pub fn resolve_eks_auth(region: &str, fips: bool) -> Result<String, String> {
    let params = EksAuthParams::builder()
        .region(region)
        .use_fips(fips)
        .build()
        .map_err(|e| e.to_string())?;
    futures_now(aws_sdk_eksauth::config::endpoint::DefaultResolver::new().resolve_endpoint(&params))
}

/// The default resolvers are synchronous rule evaluations wrapped in a ready future.
fn futures_now(
    future: aws_smithy_runtime_api::client::endpoint::EndpointFuture<'_>,
) -> Result<String, String> {
    let waker = std::task::Waker::noop();
    let mut context = std::task::Context::from_waker(waker);
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(Ok(endpoint)) => Ok(endpoint.url().to_owned()),
        std::task::Poll::Ready(Err(e)) => Err(e.to_string()),
        std::task::Poll::Pending => Err("endpoint resolution did not complete".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::classify;

    fn for_host(host: &str) -> String {
        let kind = classify(host);
        let (region, fips, dual) = match &kind {
            RegistryKind::Private(p) => (p.region.clone(), p.fips, p.dual_stack()),
            _ => ("us-east-1".to_owned(), false, false),
        };
        resolve(&kind, &region, fips, dual).unwrap()
    }

    /// Pins the SDK's endpoint rules for each host form: FIPS hosts reach the FIPS API, dual-stack
    /// hosts the dual-stack one (not the invalid `api.ecr.<r>.api.aws` of upstream #1330), and each
    /// partition its own DNS suffix.
    #[test]
    fn endpoint_follows_the_host() {
        for (host, endpoint) in [
            (
                "123456789012.dkr.ecr.us-west-2.amazonaws.com",
                "https://api.ecr.us-west-2.amazonaws.com",
            ),
            (
                "123456789012.dkr.ecr-fips.us-east-1.amazonaws.com",
                "https://api.ecr-fips.us-east-1.amazonaws.com",
            ),
            (
                "123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com",
                "https://api.ecr-fips.us-gov-west-1.amazonaws.com",
            ),
            (
                "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn",
                "https://api.ecr.cn-north-1.amazonaws.com.cn",
            ),
            (
                "123456789012.dkr-ecr.us-west-2.on.aws",
                "https://ecr.us-west-2.api.aws",
            ),
            (
                "123456789012.dkr-ecr-fips.us-east-1.on.aws",
                "https://ecr-fips.us-east-1.api.aws",
            ),
            (
                "123456789012.dkr.ecr.us-iso-east-1.c2s.ic.gov",
                "https://api.ecr.us-iso-east-1.c2s.ic.gov",
            ),
            (
                "123456789012.dkr.ecr.us-isob-east-1.sc2s.sgov.gov",
                "https://api.ecr.us-isob-east-1.sc2s.sgov.gov",
            ),
            (
                "123456789012.dkr-ecr.cn-north-1.on.amazonwebservices.com.cn",
                "https://ecr.cn-north-1.api.amazonwebservices.com.cn",
            ),
            (
                "123456789012.dkr.ecr.eusc-de-east-1.amazonaws.eu",
                "https://api.ecr.eusc-de-east-1.amazonaws.eu",
            ),
            (
                "123456789012.dkr.ecr.eu-isoe-west-1.cloud.adc-e.uk",
                "https://api.ecr.eu-isoe-west-1.cloud.adc-e.uk",
            ),
            (
                "123456789012.dkr.ecr.us-isof-east-1.csp.hci.ic.gov",
                "https://api.ecr.us-isof-east-1.csp.hci.ic.gov",
            ),
            (
                "public.ecr.aws",
                "https://api.ecr-public.us-east-1.amazonaws.com",
            ),
        ] {
            assert_eq!(for_host(host), endpoint, "{host}");
        }
    }

    /// EKS Pod Identity's exchange goes to each partition's own EKS Auth host.
    #[test]
    fn eks_auth_follows_the_partition() {
        for (region, fips, endpoint) in [
            ("us-west-2", false, "https://eks-auth.us-west-2.api.aws"),
            ("us-east-1", true, "https://eks-auth-fips.us-east-1.api.aws"),
            (
                "cn-north-1",
                false,
                "https://eks-auth.cn-north-1.api.amazonwebservices.com.cn",
            ),
            (
                "us-gov-west-1",
                false,
                "https://eks-auth.us-gov-west-1.api.aws",
            ),
            (
                "us-gov-west-1",
                true,
                "https://eks-auth-fips.us-gov-west-1.api.aws",
            ),
        ] {
            assert_eq!(
                resolve_eks_auth(region, fips).unwrap(),
                endpoint,
                "{region} fips={fips}"
            );
        }
    }

    /// Roles are assumed at the regional STS endpoint of the registry's partition, never the
    /// global `sts.amazonaws.com`, whose answer a China or GovCloud role cannot come from.
    #[test]
    fn sts_is_regional_and_follows_the_partition() {
        for (host, endpoint) in [
            (
                "123456789012.dkr.ecr.eu-west-1.amazonaws.com",
                "https://sts.eu-west-1.amazonaws.com",
            ),
            (
                "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn",
                "https://sts.cn-north-1.amazonaws.com.cn",
            ),
            (
                "123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com",
                "https://sts.us-gov-west-1.amazonaws.com",
            ),
            (
                "123456789012.dkr-ecr.us-west-2.on.aws",
                "https://sts.us-west-2.api.aws",
            ),
        ] {
            let RegistryKind::Private(p) = classify(host) else {
                panic!("{host}");
            };
            assert_eq!(
                resolve_sts(&p.region, p.fips, p.dual_stack()).unwrap(),
                endpoint,
                "{host}"
            );
        }
    }
}
