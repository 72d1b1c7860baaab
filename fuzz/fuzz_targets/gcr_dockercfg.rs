//! Fuzz target: `google-dockercfg` documents (legacy map or `config.json`): credentials round-trip, errors quote no value.
//! The checks live in `gcr_credential_provider::fuzz`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    gcr_credential_provider::fuzz::dockercfg(data);
});
