//! `init --provider oidc --registries-skeleton`: the registries file `oidc-credential-provider`
//! reads (`--config`), as a skeleton to fill in: one entry per `--match-images oidc=` host, each
//! with every protocol's block commented out. An entry with no protocol chosen is refused by the
//! provider and by `validate`, so an unedited skeleton can never be taken for a working file.

use super::check::split_commas;
use super::{InitArgs, ProviderKind};
use crate::CommandError;

/// Each protocol's block, as comment lines (without the entry's indent and `# `): the required
/// fields with placeholder values, the optional ones commented once more. The names and fields
/// are the registries file's own (docs/providers/oidc.md).
pub(super) const BLOCKS: [(&str, &[&str]); 7] = [
    (
        "the service-account token itself is the password",
        &["protocol: passthrough", "username: \"jwt\""],
    ),
    (
        "OAuth 2.0 token exchange (RFC 8693), e.g. Keycloak",
        &[
            "protocol: token-exchange",
            "endpoint: \"https://sso.example.com/realms/REALM/protocol/openid-connect/token\"",
            "username: \"oauth2\"",
            "# audience: \"registry\"",
            "# scope: \"\"",
            "# clientId: \"\"",
            "# clientSecretFile: \"/etc/kubernetes/oidc-client-secret\"",
        ],
    ),
    (
        "JFrog Artifactory OIDC integration (endpoint default: https://<host>)",
        &[
            "protocol: jfrog",
            "providerName: \"INTEGRATION\"",
            "# projectKey: \"\"",
        ],
    ),
    (
        "Quay robot account federation (default: the robot account named by the ServiceAccount annotation quay.io/federated-robot-account)",
        &["protocol: quay-robot", "# robotAccount: \"ORG+ROBOT\""],
    ),
    (
        "Cloudsmith OIDC service account",
        &[
            "protocol: cloudsmith",
            "organization: \"ORG\"",
            "serviceSlug: \"SERVICE\"",
        ],
    ),
    (
        "Chainguard assumable identity",
        &["protocol: chainguard", "identity: \"IDENTITY-ID\""],
    ),
    (
        "IBM Cloud IAM trusted profile, for icr.io (IKS and ROKS clusters only)",
        &[
            "protocol: ibm-iam",
            "profileId: \"Profile-ID\"",
            "# profileName: \"NAME\"  # instead of profileId",
        ],
    ),
];

/// The skeleton's text.
pub(super) fn skeleton(args: &InitArgs) -> Result<String, CommandError> {
    let hosts: Vec<String> = args
        .match_images
        .iter()
        .rev()
        .find(|(p, _)| *p == ProviderKind::Oidc)
        .map(|(_, list)| split_commas(list))
        .unwrap_or_default();
    let mut out = format!(
        "# Registries file for oidc-credential-provider: save it as {} (its --config).\n\
         # In each entry keep ONE protocol block, uncomment it and fill in its values\n\
         # (docs/providers/oidc.md); then check it: credential-provider-check validate.\n\
         registries:\n",
        args.oidc_registries_file()
    );
    for host in hosts {
        out.push_str(&format!("  - host: {}\n", quoted(&host)));
        for (what, lines) in BLOCKS {
            out.push_str(&format!("    # --- {what}\n"));
            for line in lines {
                out.push_str(&format!("    # {line}\n"));
            }
        }
    }
    Ok(out)
}

/// A host as a YAML double-quoted scalar (hosts hold no `"` or `\`; escaped anyway).
fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcp_oidc_registries::Registries;

    /// Every block, uncommented as the skeleton tells, is a file the provider accepts (the
    /// placeholders included), and the unedited skeleton is refused.
    #[test]
    fn each_block_uncommented_is_a_valid_registries_file() {
        for (what, lines) in BLOCKS {
            let mut text = "registries:\n  - host: \"registry.example.com\"\n".to_owned();
            for line in lines {
                text.push_str(&format!("    {line}\n"));
            }
            let parsed = Registries::parse(&text, "skeleton");
            assert!(parsed.is_ok(), "{what}: {parsed:?}\n{text}");
        }
        let mut unedited = "registries:\n  - host: \"registry.example.com\"\n".to_owned();
        for (_, lines) in BLOCKS {
            for line in lines {
                unedited.push_str(&format!("    # {line}\n"));
            }
        }
        let refused = Registries::parse(&unedited, "skeleton").unwrap_err();
        assert!(
            refused.to_string().contains("missing field \"protocol\""),
            "{refused}"
        );
    }

    /// One block per protocol the registries file knows, in its order.
    #[test]
    fn every_protocol_has_a_block() {
        let names: Vec<&str> = BLOCKS
            .iter()
            .map(|(_, lines)| lines[0].trim_start_matches("protocol: "))
            .collect();
        assert_eq!(names, kcp_oidc_registries::Protocol::NAMES);
    }
}
