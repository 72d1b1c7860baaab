//! Fuzz target: a refresh token's `exp` and the registry's `Date`: the life counted and `cacheDuration` stay in bounds.
//! The checks live in `acr_credential_provider::fuzz`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    acr_credential_provider::fuzz::refresh_token(data);
});
