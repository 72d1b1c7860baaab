//! Fuzz target: `CredentialProviderRequest::from_bytes` on raw stdin, and kubelet-encoded requests built from the input.
//! The checks live in `kcp_testkit::fuzz_bodies`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kcp_testkit::fuzz_bodies::request(data);
});
