//! Fuzz target: the registry's `WWW-Authenticate` values: the Bearer challenge parser and the realm check.
//! The checks live in `acr_credential_provider::fuzz`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    acr_credential_provider::fuzz::challenge(data);
});
