//! Loads the trust store once, as a provider does before its first TLS connection, and prints
//! what it found. For measuring that cost in isolation (`valgrind --tool=callgrind`).

fn main() {
    let (_store, report) = kcp_common::tls::TrustStore::load();
    eprintln!(
        "{} certificates from {:?} ({} skipped)",
        report.loaded, report.files, report.skipped
    );
}
