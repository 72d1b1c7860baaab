//! The process-wide rustls crypto provider: ring, set once before any TLS.
//!
//! rustls needs a provider chosen before its first handshake. The default, aws-lc-rs, costs
//! about 20 ms of CPU in every exec (and `scripts/check-deps` keeps it out of the graph), so
//! every client of this module, and any SDK transport built on it, runs on ring.

/// Installs ring as the process-wide rustls provider. Idempotent; call before any TLS.
pub fn install_crypto_provider() {
    // Err means a provider is already installed, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
