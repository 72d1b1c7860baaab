//! `doctor --image`: every provider the kubelet would run for an image, run with the `run`
//! command's code from the node's bin dir, and what would make the pull fail or go anonymous.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use kcp_kubelet_emulation::config::Config;

use crate::diagnosis::{Diagnosis, ImageCheck};
use crate::explain;
use crate::run::{self, ProviderRun, RunOptions, Verdict};

/// How long a provider may take when `--image` runs it: the kubelet's fixed exec timeout.
const PLUGIN_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs every provider matching `image` as the kubelet would, with the `run` command's code, and
/// records what would make its pull fail or go anonymous. No service-account token is sent:
/// doctor cannot mint a pod's token.
pub(super) fn check_image(
    bin: &Path,
    config: &Config,
    image: &str,
    d: &mut Diagnosis,
) -> Result<(), String> {
    let matched = explain::match_providers(&config.providers, image)?;
    let opts = RunOptions {
        bin_dir: bin.to_path_buf(),
        sa_token: None,
        sa_annotations: BTreeMap::new(),
        timeout: PLUGIN_TIMEOUT,
        show_secrets: false,
    };
    let names = matched.matching();
    let mut runs: Vec<ProviderRun> = config
        .providers
        .iter()
        .filter(|p| names.contains(&p.name.as_str()))
        .map(|p| run::run_provider(p, &matched.normalized, &opts))
        .collect();
    if runs.is_empty() {
        d.problem(
            None,
            format!(
                "image {image}: no provider matches {}, so the kubelet pulls it anonymously",
                matched.normalized
            ),
        );
    }
    for r in &mut runs {
        match (&r.verdict, &r.kubelet_error) {
            (Verdict::Skipped(_), _) => {
                r.verdict = Verdict::Skipped("requireServiceAccount is true and doctor cannot mint a pod's service-account token, so it cannot run this provider (use `run --sa-token`)".to_owned());
                d.warning(
                    Some(&r.name),
                    format!("image {image}: not run from doctor: requireServiceAccount is true and doctor cannot mint a pod's service-account token (check it with `run --sa-token`)"),
                );
            }
            (_, Some(error)) => d.problem(
                Some(&r.name),
                format!("image {image}: the kubelet would log: {}", error.trim_end()),
            ),
            _ if !r.usable() => d.problem(
                Some(&r.name),
                format!(
                    "image {image}: the answer was accepted but none of its credentials apply to {}",
                    matched.normalized
                ),
            ),
            _ => {}
        }
    }
    d.images.push(ImageCheck { matched, runs });
    Ok(())
}
