//! The example kubelet configs under testdata/configs/ are valid for the kubelet, match ACR login
//! servers (and the mirror they map), and forward the annotations service-account mode reads.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use kcp_kubelet::matching::match_image;
use kcp_testkit::configs::{annotation_keys, example_config};

#[test]
fn node_identity_config_matches_login_servers_and_the_mirror() {
    let [p] = example_config("acr.yaml")
        .try_into()
        .unwrap_or_else(|_| panic!("one provider"));
    assert_eq!(p.name, "acr-credential-provider");
    assert!(p.token_attributes.is_none());
    assert_eq!(
        p.args,
        [
            "/etc/kubernetes/azure.json",
            "--registry-mirror=mcr.microsoft.com:myregistry.azurecr.io"
        ]
    );
    for image in [
        "myreg.azurecr.io/app",
        "myreg.azurecr.cn/app",
        "myreg.azurecr.us/app",
        "myreg.westeurope.geo.azurecr.io/app",
        "mcr.microsoft.com/dotnet/runtime",
    ] {
        assert!(
            p.match_images.iter().any(|m| match_image(m, image)),
            "{image}"
        );
    }
    assert!(
        !p.match_images
            .iter()
            .any(|m| match_image(m, "myreg.azurecr.io.evil.example/app"))
    );
}

#[test]
fn token_config_names_the_annotations_the_plugin_reads() {
    let [p] = example_config("acr-service-account.yaml")
        .try_into()
        .unwrap_or_else(|_| panic!("one provider"));
    let t = p.token_attributes.clone().expect("tokenAttributes");
    assert_eq!(t.audience, "api://AzureADTokenExchange");
    assert_eq!(t.cache_type, "ServiceAccount");
    assert_eq!(t.require_service_account, Some(false));
    assert_eq!(
        annotation_keys(&p),
        [
            "kubernetes.azure.com/acr-client-id",
            "kubernetes.azure.com/acr-tenant-id"
        ]
    );
}
