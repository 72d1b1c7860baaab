//! Fuzz target: a token cache entry as the fleet's Secret publishes it (file name and bytes), checked as
//! the token controller and every node check it before use. The checks live in
//! `kcp_plugin::token_cache::fuzz`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kcp_plugin::token_cache::fuzz::published_entry(data);
});
