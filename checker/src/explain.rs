//! `match`: which providers the kubelet would run for an image, and why each pattern that does
//! not match fails (docs/kubelet-contract.md, “Image references” and “Matching”).

use kcp_kubelet::image::ImageRef;
use kcp_kubelet::matching::explain;

use kcp_kubelet_emulation::config::Provider;

/// One `matchImages` entry judged against the image.
#[derive(Debug, Clone)]
pub struct PatternResult {
    /// The entry as configured.
    pub pattern: String,
    /// Whether the kubelet would match it.
    pub matches: bool,
    /// Why not (`MatchOutcome`'s Display); `None` on a match.
    pub reason: Option<String>,
}

/// One provider judged against the image.
#[derive(Debug, Clone)]
pub struct ProviderMatch {
    /// The provider's name.
    pub name: String,
    /// Whether any pattern matches (the kubelet then runs it).
    pub matches: bool,
    /// Every pattern, in config order.
    pub patterns: Vec<PatternResult>,
}

/// The image as the kubelet sees it and the verdict per provider.
#[derive(Debug, Clone)]
pub struct MatchReport {
    /// The image as the user typed it, shown beside what the kubelet makes of it.
    pub image: String,
    /// What the kubelet matches and sends: registry/repository, no tag or digest.
    pub normalized: String,
    /// Providers in config order.
    pub providers: Vec<ProviderMatch>,
}

impl MatchReport {
    /// Names of the matching providers, in the order the kubelet runs them.
    pub fn matching(&self) -> Vec<&str> {
        self.providers
            .iter()
            .filter(|p| p.matches)
            .map(|p| p.name.as_str())
            .collect()
    }
}

/// Normalises `image` as the kubelet does (`nginx:1.27` → `docker.io/library/nginx`).
pub fn normalize(image: &str) -> Result<String, String> {
    ImageRef::parse(image)
        .map(|r| r.normalized())
        .map_err(|e| format!("invalid image {image:?}: {e}"))
}

/// Judges every provider's patterns against `image`.
pub fn match_providers(providers: &[Provider], image: &str) -> Result<MatchReport, String> {
    let normalized = normalize(image)?;
    let providers = providers
        .iter()
        .map(|p| {
            let patterns: Vec<PatternResult> = p
                .match_images
                .iter()
                .map(|pattern| {
                    let outcome = explain(pattern, &normalized);
                    PatternResult {
                        pattern: pattern.clone(),
                        matches: outcome.is_match(),
                        reason: (!outcome.is_match()).then(|| outcome.to_string()),
                    }
                })
                .collect();
            ProviderMatch {
                name: p.name.clone(),
                matches: patterns.iter().any(|r| r.matches),
                patterns,
            }
        })
        .collect();
    Ok(MatchReport {
        image: image.to_owned(),
        normalized,
        providers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_hub_shorthand_is_expanded() {
        assert_eq!(normalize("nginx:1.27").unwrap(), "docker.io/library/nginx");
        assert_eq!(
            normalize("reg.io:5000/a/b@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef").unwrap(),
            "reg.io:5000/a/b"
        );
    }
}
