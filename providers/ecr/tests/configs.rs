//! The example kubelet configs under testdata/configs/ are valid for the kubelet, cover every ECR
//! host form, and forward the annotation the provider reads in service-account mode.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use kcp_kubelet::matching::match_image;
use kcp_testkit::configs::{annotation_keys, example_config};

const IMAGES: [&str; 13] = [
    "123456789012.dkr.ecr.us-west-2.amazonaws.com/app",
    "123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com/app",
    "123456789012.dkr-ecr.us-west-2.on.aws/app",
    "123456789012.dkr-ecr-fips.us-east-1.on.aws/app",
    "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/app",
    "123456789012.dkr-ecr.cn-north-1.on.amazonwebservices.com.cn/app",
    "123456789012.dkr.ecr.us-iso-east-1.c2s.ic.gov/app",
    "123456789012.dkr.ecr.us-isob-east-1.sc2s.sgov.gov/app",
    "123456789012.dkr.ecr.eu-isoe-west-1.cloud.adc-e.uk/app",
    "123456789012.dkr.ecr.us-isof-east-1.csp.hci.ic.gov/app",
    "123456789012.dkr.ecr.eusc-de-east-1.amazonaws.eu/app",
    "public.ecr.aws/nginx/nginx",
    "ecr-public.aws.com/nginx/nginx",
];

#[test]
fn example_configs_match_every_ecr_host_form() {
    for file in ["ecr.yaml", "ecr-service-account.yaml"] {
        let [p] = example_config(file)
            .try_into()
            .unwrap_or_else(|_| panic!("{file}: one provider"));
        assert_eq!(p.name, "ecr-credential-provider");
        assert_eq!(p.args, ["get-credentials"]);
        for image in IMAGES {
            assert!(
                p.match_images.iter().any(|m| match_image(m, image)),
                "{file}: no matchImages entry for {image}"
            );
        }
        // The kubelet matches per label count: a look-alike with extra labels is never sent to us.
        let lookalike = "123456789012.dkr.ecr.us-west-2.amazonaws.com.evil.example/app";
        assert!(
            !p.match_images.iter().any(|m| match_image(m, lookalike)),
            "{file}"
        );
    }
}

#[test]
fn the_service_account_config_forwards_the_role_annotation() {
    let [p] = example_config("ecr-service-account.yaml")
        .try_into()
        .unwrap_or_else(|_| panic!("one provider"));
    let t = p.token_attributes.clone().expect("tokenAttributes");
    assert_eq!(t.audience, "sts.amazonaws.com");
    // Optional, so pods without a role fall back to the node's credentials.
    assert_eq!(t.require_service_account, Some(false));
    assert_eq!(annotation_keys(&p), ["eks.amazonaws.com/ecr-role-arn"]);
}
