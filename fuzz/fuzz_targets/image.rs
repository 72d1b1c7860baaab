//! Fuzz target: `ImageRef::parse`: accessors, Display/normalized round trips, the registry matching its own image.
//! The checks live in `kcp_testkit::fuzz_bodies`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kcp_testkit::fuzz_bodies::image(data);
});
