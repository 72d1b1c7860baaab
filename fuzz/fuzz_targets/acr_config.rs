//! Fuzz target: `azure.json` as JSON or YAML: one-line errors naming the file, settings written back as JSON read the same.
//! The checks live in `acr_credential_provider::fuzz`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    acr_credential_provider::fuzz::config(data);
});
