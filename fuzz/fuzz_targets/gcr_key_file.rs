//! Fuzz target: service-account key files and the JWT assertion signed with them; errors never quote the key.
//! The checks live in `gcr_credential_provider::fuzz`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    gcr_credential_provider::fuzz::key_file(data);
});
