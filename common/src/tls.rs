//! The trust store and TLS client configuration every provider uses.
//!
//! Why our own loader: a plugin runs once per image pull, so reading the distribution's
//! 140-certificate bundle is paid in every exec. rustls-native-certs decodes PEM with a
//! constant-time base64 decoder (~19 million instructions, 4–5 ms of CPU); certificates are
//! public, so we find lines with `memchr` and decode with SIMD base64 (`base64-simd`, already in
//! the AWS SDK's tree), about 0.3 million instructions, and hand the DER to rustls.
//!
//! Sources, as OpenSSL and rustls-native-certs read them: `SSL_CERT_FILE` replaces the bundle
//! file, `SSL_CERT_DIR` (colon-separated) replaces the certificate directories; without them the
//! first bundle found among the usual distribution paths is read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;

/// Bundle files, in the order distributions are probed (Debian/Ubuntu/Alpine, RHEL/Fedora/Amazon
/// Linux/Bottlerocket, SUSE, RHEL extracted, Alpine/BSD).
pub const BUNDLE_PATHS: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// What was loaded, for a debug line and for tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustReport {
    /// Files read.
    pub files: Vec<PathBuf>,
    /// Certificates accepted as trust anchors.
    pub loaded: usize,
    /// PEM blocks that were not valid certificates (skipped).
    pub skipped: usize,
}

/// Every `CERTIFICATE` block of a PEM text, decoded; malformed blocks are counted, not fatal.
///
/// Works on bytes, line by line: the base64 body lines are appended as they are (after trimming)
/// and decoded once per certificate, which is what keeps a 140-certificate bundle cheap.
pub fn parse_pem_certificates(pem: &[u8]) -> (Vec<CertificateDer<'static>>, usize) {
    const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
    const END: &[u8] = b"-----END CERTIFICATE-----";
    let (mut certs, mut bad) = (Vec::new(), 0);
    let mut body: Option<Vec<u8>> = None;
    for line in lines(pem) {
        let line = line.trim_ascii();
        match &mut body {
            None if line == BEGIN => body = Some(Vec::with_capacity(2048)),
            None => {}
            Some(_) if line == END => {
                let encoded = body.take().unwrap_or_default();
                match base64_simd::STANDARD.decode_to_vec(&encoded) {
                    Ok(der) => certs.push(CertificateDer::from(der)),
                    Err(_) => bad += 1,
                }
            }
            Some(encoded) => encoded.extend_from_slice(line),
        }
    }
    if body.is_some() {
        bad += 1; // a BEGIN without its END
    }
    (certs, bad)
}

/// The lines of `text` without their `\n`; `memchr` finds line ends many bytes at a time,
/// where a byte-by-byte split cost more than the decoding itself.
fn lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', text)
        .chain(std::iter::once(text.len()))
        .filter_map(move |end| {
            let line = text.get(start..end)?;
            start = end + 1;
            Some(line)
        })
}

/// Loads the trust store from the environment and the usual paths.
pub fn load_roots() -> (RootCertStore, TrustReport) {
    load_roots_from(
        std::env::var_os("SSL_CERT_FILE").map(PathBuf::from),
        std::env::var("SSL_CERT_DIR").ok(),
    )
}

/// [`load_roots`] with explicit overrides (tests, tools).
pub fn load_roots_from(
    cert_file: Option<PathBuf>,
    cert_dirs: Option<String>,
) -> (RootCertStore, TrustReport) {
    let mut files: Vec<PathBuf> = Vec::new();
    match cert_file.filter(|p| !p.as_os_str().is_empty()) {
        Some(file) => files.push(file),
        None if cert_dirs.is_none() => {
            if let Some(found) = BUNDLE_PATHS.iter().map(Path::new).find(|p| p.is_file()) {
                files.push(found.to_path_buf());
            }
        }
        None => {}
    }
    for dir in cert_dirs
        .iter()
        .flat_map(|d| d.split(':'))
        .filter(|d| !d.is_empty())
    {
        if let Ok(entries) = std::fs::read_dir(dir) {
            let mut paths: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect();
            paths.sort();
            files.extend(paths);
        }
    }
    let mut roots = RootCertStore::empty();
    let mut report = TrustReport::default();
    for file in files {
        match std::fs::read(&file) {
            Ok(pem) => {
                let (certs, bad) = parse_pem_certificates(&pem);
                let (ok, invalid) = roots.add_parsable_certificates(certs);
                report.loaded += ok;
                report.skipped += bad + invalid;
                report.files.push(file);
            }
            Err(e) => tracing::warn!(file = %file.display(), "cannot read CA certificates: {e}"),
        }
    }
    tracing::debug!(files = ?report.files, loaded = report.loaded, skipped = report.skipped, "trust store loaded");
    if report.loaded == 0 {
        tracing::warn!(
            "no CA certificates found (set SSL_CERT_FILE to a PEM bundle): TLS connections will fail"
        );
    }
    (roots, report)
}

/// A rustls client configuration with the ring provider and [`load_roots`]. The trust store is
/// read once per process, however many clients are built from it.
pub fn client_config() -> Result<rustls::ClientConfig, rustls::Error> {
    static ROOTS: std::sync::OnceLock<Arc<RootCertStore>> = std::sync::OnceLock::new();
    let roots = ROOTS.get_or_init(|| Arc::new(load_roots().0)).clone();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = include_str!("../tests/data/ca-one.pem");
    const TWO: &str = include_str!("../tests/data/ca-two.pem");

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "kcp-tls-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn parses_bundles_with_noise_crlf_and_bad_blocks() {
        let bundle = format!(
            "# comment\n{ONE}\r\nsome text\n{}\n-----BEGIN CERTIFICATE-----\n!!notbase64!!\n-----END CERTIFICATE-----\n",
            TWO.replace('\n', "\r\n")
        );
        let (certs, bad) = parse_pem_certificates(bundle.as_bytes());
        assert_eq!((certs.len(), bad), (2, 1));
        // Same DER as the reference PEM parser would give.
        let reference: Vec<_> = rustls::pki_types::pem::PemObject::pem_slice_iter(ONE.as_bytes())
            .collect::<Result<Vec<CertificateDer>, _>>()
            .unwrap();
        assert_eq!(certs[0], reference[0]);
        assert_eq!(
            parse_pem_certificates(b"-----BEGIN CERTIFICATE-----\nAAAA"),
            (vec![], 1)
        );
        assert_eq!(parse_pem_certificates(b""), (vec![], 0));
        // The last END line needs no newline after it.
        let (certs, bad) = parse_pem_certificates(TWO.trim_end().as_bytes());
        assert_eq!((certs.len(), bad), (1, 0));
    }

    /// The fast path (memchr lines, SIMD base64) yields exactly the DER of rustls's reference
    /// PEM parser, on the test CAs and on this machine's whole distribution bundle.
    #[test]
    fn matches_the_reference_parser_on_real_bundles() {
        let mut bundles = vec![format!("{ONE}{TWO}").into_bytes()];
        bundles.extend(BUNDLE_PATHS.iter().filter_map(|p| std::fs::read(p).ok()));
        for pem in bundles {
            let reference: Vec<CertificateDer> =
                rustls::pki_types::pem::PemObject::pem_slice_iter(&pem)
                    .collect::<Result<_, _>>()
                    .unwrap();
            assert!(!reference.is_empty());
            assert_eq!(parse_pem_certificates(&pem), (reference, 0));
        }
    }

    #[test]
    fn ssl_cert_file_replaces_the_system_bundle_and_dirs_add_files() {
        let d = dir();
        std::fs::write(d.join("bundle.pem"), format!("{ONE}{TWO}")).unwrap();
        let (roots, report) = load_roots_from(Some(d.join("bundle.pem")), None);
        assert_eq!((roots.len(), report.loaded, report.skipped), (2, 2, 0));
        assert_eq!(report.files, vec![d.join("bundle.pem")]);

        let certs = d.join("certs");
        std::fs::create_dir_all(&certs).unwrap();
        std::fs::write(certs.join("a.pem"), ONE).unwrap();
        std::fs::write(certs.join("b.pem"), "not a certificate").unwrap();
        let (roots, report) =
            load_roots_from(None, Some(format!("{}:/nonexistent", certs.display())));
        assert_eq!((roots.len(), report.files.len()), (1, 2));

        let (roots, report) = load_roots_from(Some(d.join("missing.pem")), None);
        assert_eq!((roots.len(), report.files.len()), (0, 0));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn builds_a_client_config() {
        assert!(client_config().is_ok());
    }
}
