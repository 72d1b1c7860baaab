//! Fuzz target: Alibaba Cloud answers (ECS metadata credentials, STS AssumeRoleWithOIDC, Container Registry logins and ListInstance pages, error answers); the first byte picks the parser. Expiries after receipt, errors one line quoting no value but the server's Code, Message and RequestId.
//! The checks live in `alibaba_credential_provider::fuzz`, shared with the stable smoke test.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    alibaba_credential_provider::fuzz::answers(data);
});
