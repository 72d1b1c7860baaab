//! Fleet mode on a node: whether its providers read what the fleet's token controller publishes,
//! so that a mismatch (a setting that is part of the key on one side only, another shared
//! identity, a region the controller does not serve) is never silent.
//!
//! It finds which providers of the kubelet's config name a shared identity
//! (`--token-cache-shared-identity` in their `args`, `CREDENTIAL_PROVIDER_TOKEN_CACHE_SHARED_IDENTITY`
//! in their `env` or in the kubelet's own environment, which EKS and AKS nodes use), reads what is
//! published: the Secret as mounted (`--fleet-tokens DIR`, checked as a node checks it), else the
//! copies `wait` made in those providers' token cache directories; and for each `--image` runs
//! each matching fleet-mode provider in key-only mode (`CREDENTIAL_PROVIDER_PRINT_CACHE_KEY`: no
//! network, no cache) to learn the entry it would read. The providers' metrics files then say
//! whether answers come from copies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kcp_kubelet::protocol::{ApiVersion, encode_request};
use kcp_kubelet_emulation::config::{Config, Provider};
use kcp_kubelet_emulation::exec::PluginExec;
use kcp_plugin::token_cache::{self, PublishedEntry, SharedIdentity};

use crate::argv::provider_setting;
use crate::diagnosis::{Diagnosis, KubeletProcess};

/// How long a key-only run may take (it makes no network call).
const KEY_RUN_TIMEOUT: Duration = Duration::from_secs(10);

/// What one provider in fleet mode is, for the checks below.
struct FleetProvider<'a> {
    provider: &'a Provider,
    shared: String,
}

/// What the fleet checks look at: the node under the host root and `doctor`'s options.
pub struct FleetCheck<'a> {
    /// The host root.
    pub root: &'a Path,
    /// The kubelet's bin dir under the host root.
    pub bin: &'a Path,
    /// The kubelet's credential-provider config.
    pub config: &'a Config,
    /// The kubelet's environment, which its plugins inherit ([`kubelet_environment`]).
    pub kubelet_env: &'a BTreeMap<String, String>,
    /// `--fleet-tokens`: the Secret as mounted, instead of the copies in the token cache.
    pub fleet_tokens: Option<&'a Path>,
    /// `--image`: the images whose entries are looked up.
    pub images: &'a [String],
}

impl FleetCheck<'_> {
    /// The fleet checks, when `--fleet-tokens` names the Secret's mount or a provider is in
    /// fleet mode; findings and notes go into `d`.
    pub fn check(&self, d: &mut Diagnosis) {
        let fleet = self.fleet_providers();
        let Some((published, source)) = self.published(&fleet, d) else {
            return;
        };
        d.fleet.push(format!(
            "{source}: {} entr{}{}",
            published.valid.len(),
            if published.valid.len() == 1 {
                "y"
            } else {
                "ies"
            },
            list(
                published
                    .valid
                    .iter()
                    .map(|(file, key)| format!("{file} ({key})"))
            )
        ));
        for (file, why) in &published.refused {
            d.warning(
                None,
                format!("fleet token {file} in {source}: a node refuses it: {why}"),
            );
        }
        if fleet.is_empty() {
            d.warning(
                None,
                format!(
                    "no provider of this node names a shared identity (--token-cache-shared-identity, or {} in its env or the kubelet's): it never reads what {source} publishes",
                    token_cache::SHARED_IDENTITY_ENV,
                ),
            );
            return;
        }
        for f in &fleet {
            self.identity(f, &published, d);
        }
        for image in self.images {
            let Ok(matched) = crate::explain::match_providers(&self.config.providers, image) else {
                continue;
            };
            let names = matched.matching();
            for f in fleet
                .iter()
                .filter(|f| names.contains(&f.provider.name.as_str()))
            {
                compare_key(self.bin, f, &matched.normalized, &published, &source, d);
            }
        }
    }

    /// The providers that name a shared identity (in their `args` or `env`, else the kubelet's
    /// environment), in config order.
    fn fleet_providers(&self) -> Vec<FleetProvider<'_>> {
        self.config
            .providers
            .iter()
            .filter_map(|p| {
                let shared = provider_setting(
                    p,
                    "token-cache-shared-identity",
                    token_cache::SHARED_IDENTITY_ENV,
                )
                .or_else(|| {
                    self.kubelet_env
                        .get(token_cache::SHARED_IDENTITY_ENV)
                        .cloned()
                })
                .filter(|s| !s.is_empty())?;
                Some(FleetProvider {
                    provider: p,
                    shared,
                })
            })
            .collect()
    }

    /// What is published and where it was read: the Secret's mount, else the copies in the
    /// fleet-mode providers' token caches; `None` when there is nothing to check (no mount and
    /// no provider in fleet mode, or a mount that cannot be read, a warning).
    fn published(&self, fleet: &[FleetProvider], d: &mut Diagnosis) -> Option<(Published, String)> {
        match self.fleet_tokens {
            Some(dir) => match read_published(dir) {
                Ok(published) => Some((published, dir.display().to_string())),
                Err(why) => {
                    d.warning(None, format!("fleet tokens {}: {why}", dir.display()));
                    None
                }
            },
            None if fleet.is_empty() => None,
            None => Some((
                read_copies(self.root, fleet),
                "the copies in this node's token cache".to_owned(),
            )),
        }
    }

    /// One fleet-mode provider's shared identity: refused when it is not one, else how many
    /// published entries are for it, and what its metrics say.
    fn identity(&self, f: &FleetProvider, published: &Published, d: &mut Diagnosis) {
        if let Err(e) = SharedIdentity::parse(&f.shared) {
            d.problem(Some(&f.provider.name), e);
            return;
        }
        let marker = format!(";shared-identity={};", f.shared);
        let for_it = published
            .valid
            .iter()
            .filter(|(_, key)| key.contains(&marker))
            .count();
        d.fleet.push(format!(
            "{}: shared identity {:?}, {for_it} published entr{} for it",
            f.provider.name,
            f.shared,
            if for_it == 1 { "y" } else { "ies" }
        ));
        metrics_hint(self.root, f, for_it, d);
    }
}

/// The kubelet's environment (`<root>/proc/<pid>/environ`), which its plugins inherit: EKS and
/// AKS nodes opt in to fleet mode there. Empty when it cannot be read.
pub fn kubelet_environment(
    root: &Path,
    kubelet: Option<&KubeletProcess>,
) -> BTreeMap<String, String> {
    let Some(k) = kubelet else {
        return BTreeMap::new();
    };
    std::fs::read(root.join("proc").join(&k.pid).join("environ"))
        .map(|bytes| {
            bytes
                .split(|b| *b == 0)
                .filter_map(|kv| {
                    let text = std::str::from_utf8(kv).ok()?;
                    let (k, v) = text.split_once('=')?;
                    Some((k.to_owned(), v.to_owned()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The published entries of a Secret volume.
struct Published {
    /// (file, key) of every entry a node's checks take.
    valid: Vec<(String, String)>,
    /// (file, why) of the others.
    refused: Vec<(String, String)>,
}

/// Reads the entries in `dir` (its `..data` snapshot when there is one).
fn read_published(dir: &Path) -> Result<Published, String> {
    let snapshot = dir.join("..data");
    let dir: PathBuf = if snapshot.is_dir() {
        snapshot
    } else {
        dir.to_path_buf()
    };
    let listing = std::fs::read_dir(&dir).map_err(|e| {
        format!(
            "cannot be read ({}): the Secret is not mounted there, or the controller has not written it",
            e.kind()
        )
    })?;
    let mut out = Published {
        valid: Vec::new(),
        refused: Vec::new(),
    };
    for name in entry_names(listing) {
        let checked = std::fs::read(dir.join(&name))
            .map_err(|e| format!("reading it failed ({})", e.kind()))
            .and_then(|bytes| PublishedEntry::parse(&name, &bytes));
        match checked {
            Ok(entry) => out.valid.push((name, entry.key().to_owned())),
            Err(why) => out.refused.push((name, why)),
        }
    }
    Ok(out)
}

/// The copies `wait` made (entries carrying the fleet mark) in the token cache directories of the
/// fleet-mode providers, under the host root.
fn read_copies(root: &Path, fleet: &[FleetProvider]) -> Published {
    let mut dirs: Vec<String> = fleet
        .iter()
        .map(|f| {
            provider_setting(f.provider, "token-cache-dir", token_cache::DIR_ENV)
                .unwrap_or_else(|| token_cache::DEFAULT_DIR.to_owned())
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    let mut out = Published {
        valid: Vec::new(),
        refused: Vec::new(),
    };
    for dir in dirs {
        let on_host = root.join(dir.trim_start_matches('/'));
        let Ok(listing) = std::fs::read_dir(&on_host) else {
            continue;
        };
        for name in entry_names(listing) {
            let entry: Option<serde_json::Value> = std::fs::read(on_host.join(&name))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            if let Some(entry) = entry.filter(|e| e.get("fleet").is_some())
                && let Some(key) = entry.get("key").and_then(|k| k.as_str())
            {
                out.valid.push((name, key.to_owned()));
            }
        }
    }
    out
}

/// Runs `f`'s provider in key-only mode for `image` and says whether the entry it reads is
/// published.
fn compare_key(
    bin: &Path,
    f: &FleetProvider,
    image: &str,
    published: &Published,
    source: &str,
    d: &mut Diagnosis,
) {
    let p = f.provider;
    let path = kcp_kubelet_emulation::validate::plugin_binary(bin, &p.name);
    let mut exec = PluginExec::new(&path);
    exec.args = p.args.clone();
    exec.env = p.env.clone();
    exec.env.extend([
        (token_cache::PRINT_KEY_ENV.to_owned(), "true".to_owned()),
        (
            token_cache::SHARED_IDENTITY_ENV.to_owned(),
            f.shared.clone(),
        ),
    ]);
    exec.timeout = KEY_RUN_TIMEOUT;
    let api_version = p.api_version.parse().unwrap_or(ApiVersion::V1);
    let outcome = exec.run(&encode_request(api_version, image, None, &BTreeMap::new()));
    let line: Option<serde_json::Value> = (outcome.exit_code == Some(0))
        .then(|| serde_json::from_slice(&outcome.stdout).ok())
        .flatten();
    let Some((file, key)) = line.as_ref().and_then(|l| {
        Some((
            l.get("file")?.as_str()?.to_owned(),
            l.get("key")?.as_str()?.to_owned(),
        ))
    }) else {
        let stderr = String::from_utf8_lossy(&outcome.stderr);
        let why = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no key printed (a provider older than this checker?)");
        d.warning(
            Some(&p.name),
            format!("image {image}: the entry it reads could not be learned: {why}"),
        );
        return;
    };
    if published.valid.iter().any(|(name, _)| *name == file) {
        d.fleet.push(format!(
            "image {image}: {} reads the published entry {file}",
            p.name
        ));
    } else {
        d.warning(
            Some(&p.name),
            format!(
                "image {image}: this node's provider reads entry {file} ({key}), not among {source}{}: it fetches its own tokens for this image; the controller's target must run it with the same args and every setting that is part of the key (docs/operations.md#fleet-mode)",
                list(published.valid.iter().map(|(_, key)| key.clone()))
            ),
        );
    }
}

/// Warns when a provider's metrics file shows fetches and no answer from a copy while entries
/// are published for its identity: the keys likely differ.
fn metrics_hint(root: &Path, f: &FleetProvider, published_for_it: usize, d: &mut Diagnosis) {
    let Some(file) = provider_setting(
        f.provider,
        "metrics-file",
        "CREDENTIAL_PROVIDER_METRICS_FILE",
    ) else {
        return;
    };
    let on_host = root.join(file.trim_start_matches('/'));
    let Ok(text) = std::fs::read_to_string(&on_host) else {
        return;
    };
    let count = |outcome: &str| -> u64 {
        text.lines()
            .filter(|l| {
                l.starts_with("credential_provider_requests_total{")
                    && l.contains(&format!("outcome=\"{outcome}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    let (copies, fetched) = (count("fleet_copy"), count("fetched"));
    d.fleet.push(format!(
        "{}: metrics {file}: {copies} answers from copies, {fetched} fetched",
        f.provider.name
    ));
    if published_for_it > 0 && copies == 0 && fetched > 0 {
        d.warning(
            Some(&f.provider.name),
            format!(
                "its metrics show {fetched} fetches and no answer from a published entry although {published_for_it} are published for its shared identity: its keys may differ from the controller's (check with --image)"
            ),
        );
    }
}

/// The token cache entry names of a directory listing, sorted.
fn entry_names(listing: std::fs::ReadDir) -> Vec<String> {
    let mut names: Vec<String> = listing
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| PublishedEntry::is_entry_name(n))
        .collect();
    names.sort();
    names
}

/// `: a, b, c` for a non-empty list, else nothing.
fn list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        String::new()
    } else {
        format!(": {}", items.join("; "))
    }
}
