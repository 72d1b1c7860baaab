//! Fuzz target: `SSL_CERT_FILE` bytes: the PEM trust-bundle reader, DER names of what it read and of the raw input, anchor selection.
//! The checks live in `kcp_plugin::tls::fuzz`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kcp_plugin::tls::fuzz::trust_bundle(data);
});
