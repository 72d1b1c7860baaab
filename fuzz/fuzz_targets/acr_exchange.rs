//! Fuzz target: ACR's `/oauth2/exchange` answer (status, headers, body): the refresh token, one-line errors quoting nothing.
//! The checks live in `acr_credential_provider::fuzz`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    acr_credential_provider::fuzz::exchange(data);
});
