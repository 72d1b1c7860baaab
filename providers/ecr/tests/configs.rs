//! The example kubelet configs under testdata/configs/ cover every ECR host form, and the
//! answers of the provider for those hosts carry an auth key the kubelet will use.

use kcp_common::matching::match_image;

/// The `matchImages` entries of the first provider of a config file (a minimal reader for our
/// own fixtures: quoted list items under `matchImages:`).
fn match_images(file: &str) -> Vec<String> {
    let path = format!(
        "{}/../../testdata/configs/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .skip_while(|l| l.trim() != "matchImages:")
        .skip(1)
        .take_while(|l| l.trim_start().starts_with("- "))
        .map(|l| {
            l.trim_start()
                .trim_start_matches("- ")
                .trim_matches('"')
                .to_owned()
        })
        .collect()
}

#[test]
fn example_configs_match_every_ecr_host_form() {
    let images = [
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
    for file in ["ecr.yaml", "ecr-service-account.yaml"] {
        let patterns = match_images(file);
        assert_eq!(patterns.len(), 13, "{file}");
        for image in images {
            assert!(
                patterns.iter().any(|p| match_image(p, image)),
                "{file}: no matchImages entry for {image}"
            );
        }
        // The kubelet matches per label count: a look-alike with extra labels is not sent to us.
        assert!(!patterns.iter().any(|p| match_image(
            p,
            "123456789012.dkr.ecr.us-west-2.amazonaws.com.evil.example/app"
        )));
    }
}
