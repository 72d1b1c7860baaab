//! Fuzz target: `pattern\ntarget`: kubelet URL glob matching, keyring lookup and `filepath.Match` differentials.
//! The checks live in `kcp_testkit::fuzz_bodies`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kcp_testkit::fuzz_bodies::matching(data);
});
