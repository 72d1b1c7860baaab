//! The example kubelet configs under testdata/configs/ are valid for the kubelet, match Google's
//! registries and nothing else, and forward the annotations Workload Identity reads.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use kcp_kubelet::matching::match_image;
use kcp_testkit::configs::{annotation_keys, example_config};

#[test]
fn example_configs_match_googles_registries_only() {
    for file in ["gcr.yaml", "gcr-workload-identity.yaml"] {
        let [p] = example_config(file)
            .try_into()
            .unwrap_or_else(|_| panic!("{file}: one provider"));
        assert_eq!(p.name, "gcr-credential-provider");
        assert_eq!(p.args.first().map(String::as_str), Some("get-credentials"));
        for image in [
            "gcr.io/p/app",
            "eu.gcr.io/p/app",
            "us-docker.pkg.dev/p/r/app",
            "container.cloud.google.com/x",
        ] {
            assert!(
                p.match_images.iter().any(|m| match_image(m, image)),
                "{file}: {image}"
            );
        }
        for image in [
            "docker.io/library/nginx",
            "gcr.io.evil.example/app",
            "pkg.dev/app",
        ] {
            assert!(
                !p.match_images.iter().any(|m| match_image(m, image)),
                "{file}: {image}"
            );
        }
    }
}

#[test]
fn the_workload_identity_config_forwards_the_opt_in_annotations() {
    let [p] = example_config("gcr-workload-identity.yaml")
        .try_into()
        .unwrap_or_else(|_| panic!("one provider"));
    assert!(
        p.args
            .iter()
            .any(|a| a.starts_with("--identity-provider=https://container.googleapis.com/"))
    );
    assert!(p.args.iter().any(|a| a == "--project-id=my-project"));
    assert_eq!(
        annotation_keys(&p),
        [
            "iam.gke.io/enable-wi-image-pull",
            "iam.gke.io/gcp-service-account"
        ]
    );
}
