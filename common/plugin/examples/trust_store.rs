//! Loads the trust store once, as a provider does before its first TLS connection, and prints
//! what it found. For measuring that cost in isolation (`valgrind --tool=callgrind`).
// A development tool, not a plugin.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

fn main() {
    let (_store, report) = kcp_plugin::tls::TrustStore::load();
    eprintln!(
        "{} certificates from {:?} ({} skipped)",
        report.loaded, report.files, report.skipped
    );
}
