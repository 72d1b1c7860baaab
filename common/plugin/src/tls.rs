//! The trust store and TLS client configuration every provider uses.
//!
//! Why our own loader: a plugin runs once per image pull, so reading the distribution's
//! 140-certificate bundle is paid in every exec. rustls-native-certs decodes PEM with a
//! constant-time base64 decoder (~19 million instructions, 4–5 ms of CPU); certificates are
//! public, so we find lines with `memchr` and decode with SIMD base64 (`base64-simd`, already in
//! the AWS SDK's tree), about 0.6 million instructions, and keep the DER. Trust anchors are then
//! parsed only for the CA names a server's chain mentions ([`TrustStore`]), not all 140.
//!
//! Sources, as OpenSSL and rustls-native-certs read them: `SSL_CERT_FILE` replaces the bundle
//! file, `SSL_CERT_DIR` (colon-separated; `;` on Windows) replaces the certificate directories;
//! without them the first bundle found among the usual distribution paths is read. Windows has
//! no bundle file: without the variables, the system certificate store is read through
//! rustls-native-certs.

use std::path::PathBuf;
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
    /// Certificates read (each becomes a trust anchor when a chain names it).
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

/// The files `SSL_CERT_FILE` / `SSL_CERT_DIR` (or the first distribution bundle) name, decoded.
fn read_certificates(
    cert_file: Option<PathBuf>,
    cert_dirs: Option<String>,
) -> (Vec<CertificateDer<'static>>, TrustReport) {
    let mut files: Vec<PathBuf> = Vec::new();
    match cert_file.filter(|p| !p.as_os_str().is_empty()) {
        Some(file) => files.push(file),
        #[cfg(windows)]
        None if cert_dirs.is_none() => return windows_store(),
        #[cfg(not(windows))]
        None if cert_dirs.is_none() => {
            if let Some(found) = BUNDLE_PATHS
                .iter()
                .map(std::path::Path::new)
                .find(|p| p.is_file())
            {
                files.push(found.to_path_buf());
            }
        }
        None => {}
    }
    let separator = if cfg!(windows) { ';' } else { ':' };
    for dir in cert_dirs
        .iter()
        .flat_map(|d| d.split(separator))
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
    let mut all = Vec::new();
    let mut report = TrustReport::default();
    for file in files {
        match std::fs::read(&file) {
            Ok(pem) => {
                let (certs, bad) = parse_pem_certificates(&pem);
                report.loaded += certs.len();
                report.skipped += bad;
                all.extend(certs);
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
    (all, report)
}

/// The Windows certificate store (the machine's and the user's trusted roots).
#[cfg(windows)]
fn windows_store() -> (Vec<CertificateDer<'static>>, TrustReport) {
    let found = rustls_native_certs::load_native_certs();
    for error in &found.errors {
        tracing::warn!("reading the Windows certificate store: {error}");
    }
    let report = TrustReport {
        files: Vec::new(),
        loaded: found.certs.len(),
        skipped: found.errors.len(),
    };
    tracing::debug!(
        loaded = report.loaded,
        "trust store loaded from the Windows certificate store"
    );
    if report.loaded == 0 {
        tracing::warn!(
            "no CA certificates in the Windows certificate store (set SSL_CERT_FILE to a PEM bundle): TLS connections will fail"
        );
    }
    (found.certs, report)
}

/// The trust store as certificates, turned into trust anchors only when a server's chain names
/// them.
///
/// Why: parsing all 140 certificates of a distribution bundle into anchors costs ~0.8 million
/// instructions per exec, and a handshake needs one or two of them. webpki only ever tries an
/// anchor whose subject equals the issuer of a certificate in the presented chain, so verifying
/// against exactly those anchors gives the same result as the whole store. A certificate whose
/// names this small DER reader cannot find is always included, so a parsing gap can cost time,
/// never a verification outcome.
#[derive(Debug, Default)]
pub struct TrustStore {
    roots: Vec<(CertificateDer<'static>, Option<std::ops::Range<usize>>)>,
}

impl TrustStore {
    /// Reads the store from `SSL_CERT_FILE` / `SSL_CERT_DIR`, else the first of [`BUNDLE_PATHS`].
    pub fn load() -> (Self, TrustReport) {
        Self::load_from(
            std::env::var_os("SSL_CERT_FILE").map(PathBuf::from),
            std::env::var("SSL_CERT_DIR").ok(),
        )
    }

    /// [`TrustStore::load`] with explicit overrides.
    pub fn load_from(cert_file: Option<PathBuf>, cert_dirs: Option<String>) -> (Self, TrustReport) {
        let (certs, report) = read_certificates(cert_file, cert_dirs);
        let roots = certs
            .into_iter()
            .map(|der| {
                let subject = der::names(&der).map(|n| n.subject);
                (der, subject)
            })
            .collect();
        (TrustStore { roots }, report)
    }

    /// How many certificates the store holds.
    pub fn len(&self) -> usize {
        self.roots.len()
    }

    /// Whether it holds none (every TLS connection will then fail).
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// The anchors a chain of these certificates can end at: those whose subject is the issuer
    /// of one of them (all, when an issuer cannot be read), and those whose subject is unknown.
    pub fn anchors_for<'a>(
        &self,
        chain: impl IntoIterator<Item = &'a CertificateDer<'a>>,
    ) -> RootCertStore {
        let mut issuers = Vec::new();
        let mut unreadable = false;
        for cert in chain {
            match der::names(cert) {
                Some(names) => issuers.push(&cert[names.issuer]),
                None => unreadable = true,
            }
        }
        let mut store = RootCertStore::empty();
        let wanted = self.roots.iter().filter(|(der, subject)| match subject {
            Some(subject) => unreadable || issuers.contains(&&der[subject.clone()]),
            None => true,
        });
        store.add_parsable_certificates(wanted.map(|(der, _)| der.clone()));
        store
    }
}

/// Verifies server certificates with rustls's WebPKI verifier over the anchors the chain names
/// ([`TrustStore::anchors_for`]); signatures as the crypto provider checks them.
#[derive(Debug)]
struct NamedAnchorsVerifier {
    store: Arc<TrustStore>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl rustls::client::danger::ServerCertVerifier for NamedAnchorsVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        let anchors = self
            .store
            .anchors_for(std::iter::once(end_entity).chain(intermediates));
        if anchors.is_empty() {
            // What the WebPKI verifier answers when no anchor in a full store fits.
            return Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer,
            ));
        }
        rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(anchors),
            self.provider.clone(),
        )
        .build()
        .map_err(|e| rustls::Error::General(e.to_string()))?
        .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A rustls client configuration with the ring provider and the [`TrustStore`] of the
/// environment. The store is read once per process, however many clients are built from it.
pub fn client_config() -> Result<rustls::ClientConfig, rustls::Error> {
    static STORE: std::sync::OnceLock<Arc<TrustStore>> = std::sync::OnceLock::new();
    client_config_for(STORE.get_or_init(|| Arc::new(TrustStore::load().0)).clone())
}

/// [`client_config`] over a given store.
pub fn client_config_for(store: Arc<TrustStore>) -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = NamedAnchorsVerifier {
        store,
        provider: provider.clone(),
    };
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

/// Just enough DER to find a certificate's issuer and subject names.
mod der {
    use std::ops::Range;

    /// Where a certificate's names sit: the contents of the issuer and subject `Name`s, which is
    /// what WebPKI compares.
    pub struct Names {
        pub issuer: Range<usize>,
        pub subject: Range<usize>,
    }

    /// `Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL,
    /// serialNumber, signature, issuer, validity, subject, ... }, ... }`.
    pub fn names(cert: &[u8]) -> Option<Names> {
        const SEQUENCE: u8 = 0x30;
        const VERSION: u8 = 0xa0;
        let certificate = expect(cert, 0, SEQUENCE)?;
        let tbs = expect(cert, certificate.start, SEQUENCE)?;
        let mut at = tbs.start;
        let first = tlv(cert, at)?;
        if first.0 == VERSION {
            at = first.1.end;
        }
        let serial = tlv(cert, at)?;
        let signature = tlv(cert, serial.1.end)?;
        let issuer = expect(cert, signature.1.end, SEQUENCE)?;
        let validity = tlv(cert, issuer.end)?;
        let subject = expect(cert, validity.1.end, SEQUENCE)?;
        (subject.end <= tbs.end).then_some(Names { issuer, subject })
    }

    fn expect(der: &[u8], at: usize, tag: u8) -> Option<Range<usize>> {
        let (found, contents) = tlv(der, at)?;
        (found == tag).then_some(contents)
    }

    /// The tag at `at` and the range of its contents (single-byte tags, definite lengths).
    fn tlv(der: &[u8], at: usize) -> Option<(u8, Range<usize>)> {
        let tag = *der.get(at)?;
        let first = *der.get(at + 1)?;
        let (len, start) = match first {
            0..=0x7f => (usize::from(first), at + 2),
            0x81..=0x84 => {
                let n = usize::from(first & 0x7f);
                let bytes = der.get(at + 2..at + 2 + n)?;
                let len = bytes
                    .iter()
                    .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
                (len, at + 2 + n)
            }
            _ => return None,
        };
        let end = start.checked_add(len)?;
        (end <= der.len()).then_some((tag, start..end))
    }
}

/// Fuzz entry point for the trust-bundle reader (the `tls_bundle` target in `fuzz/`, and
/// `common/plugin/src/fuzz_smoke.rs` on stable): arbitrary bytes in, a panic when an invariant
/// breaks. Built only for cargo-fuzz (`--cfg fuzzing`) and unit tests: no release binary has it.
#[cfg(any(fuzzing, test))]
pub mod fuzz {
    use super::*;

    /// `SSL_CERT_FILE`'s bytes: the PEM reader ([`parse_pem_certificates`]), the DER name reader
    /// on every certificate found and on the input itself (a DER file where PEM was expected),
    /// and anchor selection for chains of them.
    ///
    /// Invariants: every certificate or bad block used up a `BEGIN` line; re-encoding what was
    /// read as canonical PEM reads back the same DER, as rustls's reference parser reads it too;
    /// name ranges lie inside the certificate, issuer before subject; anchor selection never
    /// returns more anchors than the store holds.
    pub fn trust_bundle(data: &[u8]) {
        const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
        let (certs, bad) = parse_pem_certificates(data);
        let begins = lines(data).filter(|l| l.trim_ascii() == BEGIN).count();
        assert!(
            certs.len() + bad <= begins,
            "{} certificates and {bad} bad blocks from {begins} BEGIN lines",
            certs.len()
        );

        let canonical = canonical_pem(&certs);
        assert_eq!(
            parse_pem_certificates(canonical.as_bytes()),
            (certs.clone(), 0),
            "re-encoded PEM reads back differently"
        );
        if certs.iter().all(|c| !c.is_empty()) {
            let reference: Result<Vec<CertificateDer>, _> =
                rustls::pki_types::pem::PemObject::pem_slice_iter(canonical.as_bytes()).collect();
            assert_eq!(
                reference.ok().as_ref(),
                Some(&certs),
                "rustls reads the canonical PEM differently"
            );
        }

        let raw = CertificateDer::from(data.to_vec());
        for cert in certs.iter().chain([&raw]) {
            if let Some(names) = der::names(cert) {
                assert!(
                    names.issuer.start <= names.issuer.end
                        && names.issuer.end <= names.subject.start
                        && names.subject.start <= names.subject.end
                        && names.subject.end <= cert.len(),
                    "names out of order or out of bounds: {:?} {:?} in {} bytes",
                    names.issuer,
                    names.subject,
                    cert.len()
                );
            }
        }

        let store = TrustStore {
            roots: certs
                .iter()
                .chain([&raw])
                .map(|der| (der.clone(), der::names(der).map(|n| n.subject)))
                .collect(),
        };
        for chain in [vec![&raw], certs.iter().collect()] {
            let anchors = store.anchors_for(chain);
            assert!(anchors.len() <= store.len());
        }
    }

    /// Certificates as PEM the way bundles write them: 64 base64 characters a line.
    fn canonical_pem(certs: &[CertificateDer<'_>]) -> String {
        let mut out = String::new();
        for cert in certs {
            out.push_str("-----BEGIN CERTIFICATE-----\n");
            let encoded = base64_simd::STANDARD.encode_to_string(cert.as_ref());
            for chunk in encoded.as_bytes().chunks(64) {
                out.push_str(&String::from_utf8_lossy(chunk));
                out.push('\n');
            }
            out.push_str("-----END CERTIFICATE-----\n");
        }
        out
    }
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
        let (roots, report) = TrustStore::load_from(Some(d.join("bundle.pem")), None);
        assert_eq!((roots.len(), report.loaded, report.skipped), (2, 2, 0));
        assert_eq!(report.files, vec![d.join("bundle.pem")]);

        let certs = d.join("certs");
        std::fs::create_dir_all(&certs).unwrap();
        std::fs::write(certs.join("a.pem"), ONE).unwrap();
        std::fs::write(certs.join("b.pem"), "not a certificate").unwrap();
        let (roots, report) =
            TrustStore::load_from(None, Some(format!("{}:/nonexistent", certs.display())));
        assert_eq!((roots.len(), report.files.len()), (1, 2));

        let (roots, report) = TrustStore::load_from(Some(d.join("missing.pem")), None);
        assert_eq!((roots.len(), report.files.len()), (0, 0));
        let _ = std::fs::remove_dir_all(&d);
    }

    fn der_of(pem: &str) -> CertificateDer<'static> {
        parse_pem_certificates(pem.as_bytes()).0.remove(0)
    }

    /// The DER reader finds the same subject WebPKI puts in the trust anchor, for every
    /// certificate of this machine's bundle, and a self-signed CA's issuer is its subject.
    #[test]
    fn names_match_what_webpki_reads() {
        let mut certs = vec![der_of(ONE), der_of(TWO)];
        for pem in BUNDLE_PATHS.iter().filter_map(|p| std::fs::read(p).ok()) {
            certs.extend(parse_pem_certificates(&pem).0);
        }
        for der in &certs {
            let mut store = RootCertStore::empty();
            store.add(der.clone()).unwrap();
            let names = der::names(der).expect("names of a CA certificate");
            assert_eq!(&der[names.subject.clone()], store.roots[0].subject.as_ref());
        }
        let one = der_of(ONE);
        let names = der::names(&one).unwrap();
        assert_eq!(&one[names.issuer], &one[names.subject]);
        // Truncated or foreign input is "unknown", never a panic.
        for cut in 0..one.len() {
            let _ = der::names(&one[..cut]);
        }
        assert!(der::names(b"").is_none());
        assert!(der::names(&[0x30, 0x85, 1, 2, 3, 4, 5]).is_none());
    }

    #[test]
    fn only_the_anchors_a_chain_names_are_parsed() {
        let d = dir();
        std::fs::write(d.join("bundle.pem"), format!("{ONE}{TWO}")).unwrap();
        let (store, report) = TrustStore::load_from(Some(d.join("bundle.pem")), None);
        assert_eq!((report.loaded, report.skipped), (2, 0));
        let (one, two) = (der_of(ONE), der_of(TWO));
        // A self-signed certificate names itself as issuer.
        let anchors = store.anchors_for([&one]);
        assert_eq!(anchors.len(), 1);
        assert_eq!(
            anchors.roots[0].subject.as_ref(),
            &one[der::names(&one).unwrap().subject]
        );
        assert_eq!(store.anchors_for([&two, &one]).len(), 2);
        // An unreadable certificate in the chain: every anchor, as without the prefilter.
        let garbage = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x00]);
        assert_eq!(store.anchors_for([&garbage]).len(), 2);
        // A chain naming no anchor of ours.
        let (other, _) = TrustStore::load_from(Some(d.join("missing.pem")), None);
        assert!(other.anchors_for([&one]).is_empty());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn builds_a_client_config() {
        assert!(client_config().is_ok());
    }
}
