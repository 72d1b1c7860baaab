//! Fuzz target: Go duration parsing: print/parse and serde round trips, sign and concatenation laws.
//! The checks live in `kcp_testkit::fuzz_bodies`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kcp_testkit::fuzz_bodies::duration(data);
});
