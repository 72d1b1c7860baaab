//! Fuzz target: IAM Credentials' `generateAccessToken` answer: `expireTime` within bounds, no value quoted.
//! The checks live in `gcr_credential_provider::fuzz`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    gcr_credential_provider::fuzz::iam_answer(data);
});
