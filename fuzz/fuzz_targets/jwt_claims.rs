//! Fuzz target: unverified JWT claims: the input as a token and as a token's payload; `exp`/`iat`/`nbf` and service-account claims.
//! The checks live in `kcp_plugin::jwt::fuzz`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kcp_plugin::jwt::fuzz::claims(data);
});
