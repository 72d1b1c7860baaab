//! `gcr-credential-provider` run as the kubelet runs it, against fakes on 127.0.0.1 reached only
//! through what a real operator has: `GCE_METADATA_HOST`, a key file's `token_uri`, the STS/IAM
//! endpoint flags and the proxy variables. Every answer is checked byte for byte and judged by the
//! test kit as the kubelet would, in each API version.

// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod bad_input;
mod cli;
mod dockercfg;
mod faults;
mod flags;
mod keyfile;
mod metadata;
mod metrics;
mod support;
mod tls;
mod token_cache;
mod wif;
