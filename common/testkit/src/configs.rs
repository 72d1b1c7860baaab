//! The example kubelet configurations under `testdata/configs/`, read and validated by the same
//! code the checker uses (`kcp_kubelet_emulation::config` and `kcp_kubelet_emulation::validate`), so every provider's
//! config test starts from the same ground: the kubelet would accept the file.

use std::path::PathBuf;

use kcp_kubelet_emulation::config::{self, Provider};
use kcp_kubelet_emulation::validate;

/// The path of an example config.
pub fn example_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/configs")
        .join(file)
}

/// Loads `testdata/configs/<file>` as the kubelet does and asserts that the kubelet's validation
/// finds no error in it; returns its providers.
pub fn example_config(file: &str) -> Vec<Provider> {
    let path = example_path(file);
    let loaded = config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let v = validate::validate(&loaded, None);
    assert!(
        v.errors.is_empty(),
        "{}: the kubelet would refuse it: {:?}",
        path.display(),
        v.errors
    );
    loaded.providers
}

/// A provider's `tokenAttributes` annotation keys, required ones first, in file order.
pub fn annotation_keys(p: &Provider) -> Vec<String> {
    p.token_attributes
        .iter()
        .flat_map(|t| t.required_keys.iter().chain(&t.optional_keys))
        .cloned()
        .collect()
}
