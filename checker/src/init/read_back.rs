//! The round-trip check: the printed text is decoded back with the kubelet's strict decoder and
//! must give exactly the data it was written from, before the kubelet's rules run on it.

use std::path::{Path, PathBuf};

use kcp_kubelet::duration::GoDuration;
use kcp_kubelet_emulation::config::{self, Config, Provider, TokenAttributes};
use kcp_kubelet_emulation::validate;

use super::document::Document;
use crate::CommandError;

/// What the kubelet's decoder must read back from the text: the document as `config::Provider`s.
fn expected_providers(doc: &Document, source: &Path) -> Result<Vec<Provider>, CommandError> {
    doc.providers
        .iter()
        .map(|p| {
            let duration = GoDuration::parse(&p.default_cache_duration).map_err(|e| {
                CommandError::Refused(format!(
                    "defaultCacheDuration {:?}: {e}",
                    p.default_cache_duration
                ))
            })?;
            Ok(Provider {
                name: p.name.to_owned(),
                match_images: p.match_images.clone(),
                default_cache_duration: Some(duration),
                api_version: p.api_version.clone(),
                args: p.args.clone(),
                env: p
                    .env
                    .iter()
                    .map(|e| (e.name.clone(), e.value.clone()))
                    .collect(),
                token_attributes: p.token_attributes.as_ref().map(|t| TokenAttributes {
                    audience: t.service_account_token_audience.clone(),
                    cache_type: t.cache_type.to_owned(),
                    require_service_account: Some(t.require_service_account),
                    required_keys: t.required_service_account_annotation_keys.clone(),
                    optional_keys: t.optional_service_account_annotation_keys.clone(),
                }),
                source: source.to_path_buf(),
            })
        })
        .collect()
}

/// Decodes `text` as the kubelet will (strictly), checks it reads back as `doc`, and runs the
/// kubelet's rules on it: an error when the kubelet would refuse it or a provider's arguments are
/// wrong, else the findings (warnings, notes) for stderr.
pub(super) fn read_back(
    text: &str,
    doc: &Document,
    drop_in: bool,
) -> Result<validate::Validation, CommandError> {
    let source = PathBuf::from("<init>");
    let decoded = config::decode(text, &source).map_err(|e| {
        CommandError::Refused(format!(
            "the kubelet could not read the generated config: {e}"
        ))
    })?;
    if decoded != expected_providers(doc, &source)? {
        return Err(CommandError::Refused(
            "the generated config does not read back as the data it was written from (a bug in init)".to_owned(),
        ));
    }
    let loaded = Config {
        files: vec![source],
        directory: drop_in,
        providers: decoded,
    };
    let v = validate::validate(&loaded, None);
    if let Some(message) = v.kubelet_message() {
        return Err(CommandError::Refused(format!(
            "the kubelet would refuse this config: {message}"
        )));
    }
    if let Some(f) = v.arguments.first() {
        return Err(CommandError::Refused(format!(
            "{}: {}",
            f.provider.as_deref().unwrap_or_default(),
            f.message
        )));
    }
    Ok(v)
}
