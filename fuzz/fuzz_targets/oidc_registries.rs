//! Fuzz target: the oidc provider's registries file: one-line errors naming the file, no endpoint a token could reach in clear.
//! The checks live in `kcp_testkit::fuzz_bodies`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kcp_testkit::fuzz_bodies::oidc_registries(data);
});
