//! Loads the trust store once, as a provider does before its first TLS connection, and prints
//! what it found. For measuring that cost in isolation (`valgrind --tool=callgrind`).

fn main() {
    let (roots, report) = kcp_common::tls::load_roots();
    eprintln!(
        "{} trust anchors from {:?} ({} skipped)",
        roots.len(),
        report.files,
        report.skipped
    );
}
