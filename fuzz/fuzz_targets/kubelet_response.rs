//! Fuzz target: the kubelet's strict response decoder, and our encoder's output always being accepted.
//! The checks live in `kcp_testkit::fuzz_bodies`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kcp_testkit::fuzz_bodies::kubelet_response(data);
});
