//! Loads the trust store once, as a provider does before its first TLS connection, and prints
//! what it found. For measuring that cost in isolation (`valgrind --tool=callgrind`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // A development tool, not a plugin.

fn main() {
    let (_store, report) = kcp_plugin::tls::TrustStore::load();
    eprintln!(
        "{} certificates from {:?} ({} skipped)",
        report.loaded, report.files, report.skipped
    );
}
