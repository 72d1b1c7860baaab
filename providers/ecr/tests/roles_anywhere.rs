//! IAM Roles Anywhere without the signing helper, against a loopback fake of `CreateSession`
//! that checks the X.509 SigV4 independently (the certificate parsed from `X-Amz-X509`, the
//! canonical request recomputed here, the signature verified with ring and the certificate's
//! public key), and an ECR fake that must see the handed-out access key: every supported key
//! form (RSA PKCS#1/PKCS#8, EC P-256/P-384 SEC1/PKCS#8), both ways of configuring (flags and the
//! AWS config's `credential_process` drop-in) with no `aws_signing_helper` anywhere, every
//! refusal as one line without key material, the token cache, key-only mode and
//! `cacheDuration` under the session's expiry.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
#![cfg(unix)]

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;
use kcp_kubelet::ApiVersion;
use kcp_kubelet::duration::GoDuration;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
use kcp_testkit::{Plugin, TempDir};
use support::{BIN, PRIVATE_HOST, ecr_token, rfc3339, sigv4_scope, unix_now};

const ANCHOR: &str = "arn:aws:rolesanywhere:eu-central-1:123456789012:trust-anchor/4f3c2b1a-0000-4000-8000-00000000a001";
const PROFILE: &str =
    "arn:aws:rolesanywhere:eu-central-1:123456789012:profile/4f3c2b1a-0000-4000-8000-00000000b002";
const ROLE: &str = "arn:aws:iam::123456789012:role/hybrid-pull";
const ACCESS_KEY: &str = "ASIAROLESANYWHERE01";
const SECRET_KEY: &str = "roles-anywhere-secret-access-key";
const SESSION_TOKEN: &str = "roles-anywhere-session-token-value";
/// The leaf's serial: more than 64 bits, so its decimal form is not a machine integer's.
const SERIAL: [u8; 10] = [0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f, 0x60, 0x71, 0x82, 0x93];

/// The key algorithms the tests make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alg {
    Rsa,
    P256,
    P384,
    P521,
}

/// A key made by openssl in both its PEM forms, and certificates for it.
struct Keys {
    alg: Alg,
    dir: TempDir,
    /// PKCS#8 `PRIVATE KEY`.
    pkcs8: String,
    /// PKCS#1 `RSA PRIVATE KEY` or SEC1 `EC PRIVATE KEY`.
    traditional: String,
}

/// openssl, or the skip recorded (`None`: the test returns).
fn openssl_ready() -> bool {
    let ok = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        kcp_testkit::skip::missing("openssl", "makes the IAM Roles Anywhere test keys");
    }
    ok
}

fn openssl(args: &[&str]) -> String {
    let out = Command::new("openssl").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Registers a PEM's whole text and each base64 line as secrets: none may reach stderr.
fn register_pem(pem: &str) {
    kcp_testkit::secrets::register(pem);
    for line in pem.lines().filter(|l| !l.starts_with("-----")) {
        kcp_testkit::secrets::register(line);
    }
}

impl Keys {
    fn new(alg: Alg) -> Keys {
        let dir = TempDir::new("ra-keys");
        let file = dir.path().join("key.pem");
        let f = file.to_str().unwrap();
        let mut args = vec!["genpkey", "-out", f, "-algorithm"];
        match alg {
            Alg::Rsa => args.extend(["RSA", "-pkeyopt", "rsa_keygen_bits:2048"]),
            Alg::P256 => args.extend(["EC", "-pkeyopt", "ec_paramgen_curve:P-256"]),
            Alg::P384 => args.extend(["EC", "-pkeyopt", "ec_paramgen_curve:P-384"]),
            Alg::P521 => args.extend(["EC", "-pkeyopt", "ec_paramgen_curve:P-521"]),
        }
        openssl(&args);
        let pkcs8 = std::fs::read_to_string(&file).unwrap();
        let traditional = openssl(&["pkey", "-in", f, "-traditional"]);
        register_pem(&pkcs8);
        register_pem(&traditional);
        Keys {
            alg,
            dir,
            pkcs8,
            traditional,
        }
    }

    /// The key encrypted: PKCS#8 `ENCRYPTED PRIVATE KEY`, or the traditional form with
    /// `Proc-Type: 4,ENCRYPTED`.
    fn encrypted(&self, pkcs8: bool) -> String {
        let file = self.dir.path().join("key.pem");
        let mut args = vec![
            "pkey",
            "-in",
            file.to_str().unwrap(),
            "-aes256",
            "-passout",
            "pass:test-passphrase",
        ];
        if !pkcs8 {
            args.push("-traditional");
        }
        let pem = openssl(&args);
        register_pem(&pem);
        pem
    }

    /// A certificate for this key, issued by `ca`, valid from `from` to `to` (Unix seconds).
    fn certificate(&self, ca: &Ca, from: u64, to: u64) -> String {
        let key = match self.alg {
            Alg::Rsa => {
                rcgen::KeyPair::from_pem_and_sign_algo(&self.pkcs8, &rcgen::PKCS_RSA_SHA256)
            }
            Alg::P256 => {
                rcgen::KeyPair::from_pem_and_sign_algo(&self.pkcs8, &rcgen::PKCS_ECDSA_P256_SHA256)
            }
            Alg::P384 => {
                rcgen::KeyPair::from_pem_and_sign_algo(&self.pkcs8, &rcgen::PKCS_ECDSA_P384_SHA384)
            }
            Alg::P521 => panic!("rcgen has no P-521 key: write the certificate with another key"),
        }
        .unwrap();
        ca.issue(&key, from, to)
    }
}

/// A test CA (P-256), with an intermediate that issues the leaves.
struct Ca {
    root: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
    intermediate: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl Ca {
    fn new() -> Ca {
        let params = |cn: &str| {
            let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            p.distinguished_name.push(rcgen::DnType::CommonName, cn);
            p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            p.key_usages = vec![
                rcgen::KeyUsagePurpose::KeyCertSign,
                rcgen::KeyUsagePurpose::CrlSign,
            ];
            p
        };
        let root = rcgen::CertifiedIssuer::self_signed(
            params("ra test root"),
            rcgen::KeyPair::generate().unwrap(),
        )
        .unwrap();
        let intermediate = rcgen::CertifiedIssuer::signed_by(
            params("ra test issuing CA"),
            rcgen::KeyPair::generate().unwrap(),
            &root,
        )
        .unwrap();
        Ca { root, intermediate }
    }

    fn issue(&self, key: &rcgen::KeyPair, from: u64, to: u64) -> String {
        let epoch = || rcgen::date_time_ymd(1970, 1, 1);
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "hybrid-node-1");
        p.serial_number = Some(rcgen::SerialNumber::from_slice(&SERIAL));
        p.not_before = epoch() + std::time::Duration::from_secs(from);
        p.not_after = epoch() + std::time::Duration::from_secs(to);
        p.signed_by(key, &self.intermediate).unwrap().pem()
    }

    /// The intermediate and root, as an intermediates bundle.
    fn bundle(&self) -> String {
        format!("{}{}", self.intermediate.pem(), self.root.pem())
    }
}

/// A valid certificate's window: an hour ago to a day from now.
fn valid_window() -> (u64, u64) {
    (unix_now() - 3600, unix_now() + 86_400)
}

/// Writes `text` to `dir/name` with `mode`.
fn write(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

/// No `aws_signing_helper` on the PATH the plugin runs with: the exchange is ours.
fn assert_no_helper_on_path() {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        assert!(
            !dir.join("aws_signing_helper").exists(),
            "aws_signing_helper is on PATH in {}",
            dir.display()
        );
    }
}

/// A CreateSession answer (201, as the service answers) with credentials until `expires_at`.
fn session(expires_at: u64) -> FakeResponse {
    FakeResponse::new(
        201,
        format!(
            r#"{{"credentialSet":[{{"assumedRoleUser":{{"arn":"arn:aws:sts::123456789012:assumed-role/hybrid-pull/node","assumedRoleId":"AROATEST:node"}},"credentials":{{"accessKeyId":"{ACCESS_KEY}","expiration":"{}","secretAccessKey":"{SECRET_KEY}","sessionToken":"{SESSION_TOKEN}"}},"packedPolicySize":0,"roleArn":"{ROLE}","sourceIdentity":"CN=hybrid-node-1"}}],"subjectArn":"arn:aws:rolesanywhere:eu-central-1:123456789012:subject/x"}}"#,
            rfc3339(expires_at)
        ),
    )
    .header("content-type", "application/json")
}

/// The Roles Anywhere and ECR fakes, and a plugin pointed at both.
struct Aws {
    ra: FakeServer,
    ecr: FakeServer,
}

impl Aws {
    fn start(answer: FakeResponse) -> Aws {
        let ra = FakeServer::start(move |_| answer.clone());
        let token = ecr_token("AWS:roles-anywhere-pull-pass", Some(unix_now() + 12 * 3600));
        let ecr = FakeServer::start(move |_| token.clone());
        Aws { ra, ecr }
    }

    fn ok() -> Aws {
        Aws::start(session(unix_now() + 3600))
    }

    /// The plugin with no AWS credentials of its own: only Roles Anywhere can sign.
    fn plugin(&self) -> Plugin {
        assert_no_helper_on_path();
        Plugin::new(BIN)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AWS_ENDPOINT_URL_ROLESANYWHERE", self.ra.url())
            .env("AWS_ENDPOINT_URL_ECR", self.ecr.url())
            .secret(SECRET_KEY)
            .secret(SESSION_TOKEN)
    }

    /// Asserts the pull went through: one CreateSession, verified, and ECR signed with its key.
    fn assert_pulled(
        &self,
        outcome: &kcp_testkit::Outcome,
        cert_pem: &str,
        chain: &[&str],
        session_name: Option<&str>,
    ) {
        let ok = outcome.accepted();
        assert_eq!(ok.auth[PRIVATE_HOST].1, "roles-anywhere-pull-pass");
        let ra = self.ra.requests();
        assert_eq!(ra.len(), 1, "{ra:?}");
        verify_create_session(&ra[0], cert_pem, chain, session_name);
        let ecr = self.ecr.requests();
        assert_eq!(ecr.len(), 1);
        assert_eq!(
            sigv4_scope(&ecr[0]),
            Some((ACCESS_KEY.into(), "us-west-2".into(), "ecr".into()))
        );
        assert_eq!(ecr[0].header("x-amz-security-token"), Some(SESSION_TOKEN));
    }
}

fn der_of(pem: &str) -> Vec<u8> {
    let body: String = pem
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}

fn sha256_hex(bytes: &[u8]) -> String {
    kcp_plugin::hex::encode(ring::digest::digest(&ring::digest::SHA256, bytes).as_ref())
}

/// Checks a CreateSession request as the service would, from scratch: the certificate in
/// `X-Amz-X509` is the one given; `Credential=` carries its serial in decimal, the date, the
/// trust anchor's region and `rolesanywhere`; the signed headers are exactly the expected ones;
/// the signature over the recomputed string to sign verifies with the certificate's public key;
/// the body names the ARNs and the session.
fn verify_create_session(
    r: &RecordedRequest,
    cert_pem: &str,
    chain: &[&str],
    session_name: Option<&str>,
) {
    let b64 = |der: &[u8]| base64::engine::general_purpose::STANDARD.encode(der);
    assert_eq!(
        (r.method.as_str(), r.target.as_str()),
        ("POST", "/sessions")
    );
    assert_eq!(r.header("content-type"), Some("application/json"));
    let der = base64::engine::general_purpose::STANDARD
        .decode(r.header("x-amz-x509").unwrap())
        .unwrap();
    assert_eq!(der, der_of(cert_pem), "X-Amz-X509 is not the certificate");
    let expected_chain: Vec<String> = chain.iter().map(|pem| b64(&der_of(pem))).collect();
    assert_eq!(
        r.header("x-amz-x509-chain").map(str::to_owned),
        (!chain.is_empty()).then(|| expected_chain.join(","))
    );
    let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
    let date = r.header("x-amz-date").unwrap();
    let auth = r.header("authorization").unwrap();
    let (alg, rest) = auth.split_once(' ').unwrap();
    let fields: Vec<&str> = rest.split(", ").collect();
    assert_eq!(fields.len(), 3, "{auth}");
    let credential = fields[0].strip_prefix("Credential=").unwrap();
    let serial = cert.tbs_certificate.serial.to_string();
    assert_eq!(
        serial, "47724914708969405121171",
        "the test's serial in decimal"
    );
    assert_eq!(
        credential,
        format!(
            "{serial}/{}/eu-central-1/rolesanywhere/aws4_request",
            &date[..8]
        )
    );
    let signed = fields[1].strip_prefix("SignedHeaders=").unwrap();
    let expected_signed = if chain.is_empty() {
        "content-type;host;x-amz-date;x-amz-x509"
    } else {
        "content-type;host;x-amz-date;x-amz-x509;x-amz-x509-chain"
    };
    assert_eq!(signed, expected_signed);
    let signature = fields[2].strip_prefix("Signature=").unwrap();
    // The canonical request, recomputed from what arrived.
    let header_lines: String = signed
        .split(';')
        .map(|h| format!("{h}:{}\n", r.header(h).unwrap().trim()))
        .collect();
    let canonical = format!(
        "POST\n/sessions\n\n{header_lines}\n{signed}\n{}",
        sha256_hex(&r.body)
    );
    let string_to_sign = format!(
        "{alg}\n{date}\n{}\n{}",
        credential.split_once('/').unwrap().1,
        sha256_hex(canonical.as_bytes())
    );
    let spki = cert.public_key();
    let key_alg = spki.algorithm.algorithm.to_id_string();
    let curve = spki
        .algorithm
        .parameters
        .as_ref()
        .and_then(|p| p.as_oid().ok())
        .map(|o| o.to_id_string())
        .unwrap_or_default();
    let (verify_alg, expected_alg): (&dyn ring::signature::VerificationAlgorithm, &str) =
        match (key_alg.as_str(), curve.as_str()) {
            ("1.2.840.113549.1.1.1", _) => (
                &ring::signature::RSA_PKCS1_2048_8192_SHA256,
                "AWS4-X509-RSA-SHA256",
            ),
            (_, "1.2.840.10045.3.1.7") => (
                &ring::signature::ECDSA_P256_SHA256_ASN1,
                "AWS4-X509-ECDSA-SHA256",
            ),
            (_, "1.3.132.0.34") => (
                &ring::signature::ECDSA_P384_SHA256_ASN1,
                "AWS4-X509-ECDSA-SHA256",
            ),
            other => panic!("unexpected key {other:?}"),
        };
    assert_eq!(alg, expected_alg);
    let signature = (0..signature.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&signature[i..i + 2], 16).unwrap())
        .collect::<Vec<u8>>();
    ring::signature::UnparsedPublicKey::new(verify_alg, &spki.subject_public_key.data)
        .verify(string_to_sign.as_bytes(), &signature)
        .unwrap_or_else(|_| panic!("the X.509 signature does not verify:\n{string_to_sign}"));
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let mut expected = serde_json::json!({
        "durationSeconds": 3600,
        "profileArn": PROFILE,
        "roleArn": ROLE,
        "trustAnchorArn": ANCHOR,
    });
    if let Some(name) = session_name {
        expected["roleSessionName"] = name.into();
    }
    assert_eq!(body, expected);
}

/// The `--roles-anywhere-*` flags for these files.
fn flags(cert: &Path, key: &Path) -> Vec<String> {
    vec![
        format!("--roles-anywhere-certificate={}", cert.display()),
        format!("--roles-anywhere-private-key={}", key.display()),
        format!("--roles-anywhere-trust-anchor-arn={ANCHOR}"),
        format!("--roles-anywhere-profile-arn={PROFILE}"),
        format!("--roles-anywhere-role-arn={ROLE}"),
    ]
}

/// A node's files: a certificate and the key in the chosen form, in a fresh directory.
struct Node {
    dir: TempDir,
    cert_pem: String,
    cert: PathBuf,
    key: PathBuf,
}

fn node(keys: &Keys, ca: &Ca, pkcs8: bool) -> Node {
    let (from, to) = valid_window();
    let dir = TempDir::new("ra-node");
    let cert_pem = keys.certificate(ca, from, to);
    let cert = write(dir.path(), "node.crt", &cert_pem, 0o644);
    let key = write(
        dir.path(),
        "node.key",
        if pkcs8 {
            &keys.pkcs8
        } else {
            &keys.traditional
        },
        0o600,
    );
    Node {
        dir,
        cert_pem,
        cert,
        key,
    }
}

#[test]
fn every_key_form_signs_a_session_whose_keys_pull_from_ecr() {
    if !openssl_ready() {
        return;
    }
    let ca = Ca::new();
    for alg in [Alg::Rsa, Alg::P256, Alg::P384] {
        let keys = Keys::new(alg);
        for pkcs8 in [false, true] {
            let n = node(&keys, &ca, pkcs8);
            let aws = Aws::ok();
            let out = aws
                .plugin()
                .args(flags(&n.cert, &n.key))
                .request(ApiVersion::V1, PRIVATE_HOST);
            println!("{alg:?} pkcs8={pkcs8}");
            aws.assert_pulled(&out, &n.cert_pem, &[], None);
        }
    }
}

#[test]
fn environment_twins_and_intermediates_configure_it_too() {
    if !openssl_ready() {
        return;
    }
    let ca = Ca::new();
    let keys = Keys::new(Alg::P256);
    let n = node(&keys, &ca, true);
    let bundle = write(n.dir.path(), "chain.pem", &ca.bundle(), 0o644);
    let aws = Aws::ok();
    let out = aws
        .plugin()
        .env(
            "ECR_ROLES_ANYWHERE_CERTIFICATE",
            n.cert.display().to_string(),
        )
        .env(
            "ECR_ROLES_ANYWHERE_PRIVATE_KEY",
            n.key.display().to_string(),
        )
        .env(
            "ECR_ROLES_ANYWHERE_INTERMEDIATES",
            bundle.display().to_string(),
        )
        .env("ECR_ROLES_ANYWHERE_TRUST_ANCHOR_ARN", ANCHOR)
        .env("ECR_ROLES_ANYWHERE_PROFILE_ARN", PROFILE)
        .env("ECR_ROLES_ANYWHERE_ROLE_ARN", ROLE)
        .env("ECR_ROLES_ANYWHERE_SESSION_DURATION", "1h")
        .request(ApiVersion::V1, PRIVATE_HOST);
    aws.assert_pulled(
        &out,
        &n.cert_pem,
        &[&ca.intermediate.pem(), &ca.root.pem()],
        None,
    );
}

/// nodeadm's layout: `credential_process` runs the helper from a directory where it is not, so
/// only the native exchange can answer.
fn helper_line(n: &Node, extra: &str) -> String {
    format!(
        "/usr/local/bin/aws_signing_helper credential-process --certificate '{}' --private-key \"{}\" --trust-anchor-arn {ANCHOR} --profile-arn {PROFILE} --role-arn={ROLE} --role-session-name mock-hybrid-node{extra}",
        n.cert.display(),
        n.key.display()
    )
}

#[test]
fn the_aws_config_drop_in_works_without_the_helper_binary() {
    if !openssl_ready() {
        return;
    }
    assert!(!Path::new("/usr/local/bin/aws_signing_helper").exists());
    let ca = Ca::new();
    let keys = Keys::new(Alg::Rsa);
    let n = node(&keys, &ca, false);
    // The default profile in ~/.aws/config.
    let aws = Aws::ok();
    let out = home_config(
        aws.plugin(),
        &format!(
            "[default]\nregion = us-west-2\ncredential_process = {} --with-proxy\n",
            helper_line(&n, "")
        ),
    )
    .request(ApiVersion::V1, PRIVATE_HOST);
    aws.assert_pulled(&out, &n.cert_pem, &[], Some("mock-hybrid-node"));

    // A named profile in AWS_CONFIG_FILE, with intermediates, beside another profile.
    let bundle = write(n.dir.path(), "chain.pem", &ca.intermediate.pem(), 0o644);
    let config = write(
        n.dir.path(),
        "config",
        &format!(
            "[default]\ncredential_process = /bin/false\n\n# nodeadm's profile\n[profile hybrid]\nregion = us-west-2\ncredential_process = {}\n",
            helper_line(&n, &format!(" --intermediates {}", bundle.display()))
        ),
        0o644,
    );
    let aws = Aws::ok();
    let out = aws
        .plugin()
        .env("AWS_CONFIG_FILE", config.display().to_string())
        .env("AWS_PROFILE", "hybrid")
        .request(ApiVersion::V1, PRIVATE_HOST);
    aws.assert_pulled(
        &out,
        &n.cert_pem,
        &[&ca.intermediate.pem()],
        Some("mock-hybrid-node"),
    );
}

/// `p` with `text` as its `~/.aws/config`. A Windows binary under wine does not see the
/// harness's `HOME` (its home is wine's `USERPROFILE`), so there the file is named by
/// `AWS_CONFIG_FILE` instead, which both the SDK and the drop-in read first.
fn home_config(p: Plugin, text: &str) -> Plugin {
    std::fs::create_dir_all(p.home().join(".aws")).unwrap();
    let file = p.home().join(".aws").join("config");
    std::fs::write(&file, text).unwrap();
    if kcp_testkit::windows_target() {
        p.env("AWS_CONFIG_FILE", file.display().to_string())
    } else {
        p
    }
}

#[test]
fn another_credential_process_is_left_to_the_sdk() {
    if kcp_testkit::skip_on_windows(
        "another_credential_process_is_left_to_the_sdk",
        "the profile's credential_process is a shell command",
    ) {
        return;
    }
    let aws = Aws::ok();
    let p = home_config(
        aws.plugin().secret("process-secret-access-key"),
        "[default]\ncredential_process = echo '{\"Version\": 1, \"AccessKeyId\": \"AKIDFROMPROCESS\", \"SecretAccessKey\": \"process-secret-access-key\"}'\n",
    );
    p.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    assert!(aws.ra.requests().is_empty());
    assert_eq!(
        sigv4_scope(&aws.ecr.requests()[0]).unwrap().0,
        "AKIDFROMPROCESS"
    );
}

#[test]
fn helper_flags_that_cannot_be_honoured_are_refused_by_name() {
    let dir = TempDir::new("ra-refused");
    let n = Node {
        cert_pem: String::new(),
        cert: dir.path().join("c.pem"),
        key: dir.path().join("k.pem"),
        dir,
    };
    for (extra, flag) in [
        (" --pkcs11-lib /usr/lib/opensc-pkcs11.so", "--pkcs11-lib"),
        (" --tpm-key-password secret-tpm-pass", "--tpm-key-password"),
        (" --cert-selector Key=x", "--cert-selector"),
        (
            " --use-latest-expiring-certificate",
            "--use-latest-expiring-certificate",
        ),
        (" --frobnicate", "--frobnicate"),
    ] {
        let aws = Aws::ok();
        let out = home_config(
            aws.plugin(),
            &format!(
                "[default]\ncredential_process = {}\n",
                helper_line(&n, extra)
            ),
        )
        .request(ApiVersion::V1, PRIVATE_HOST);
        let line = out.rejected();
        assert_eq!(out.exec.exit_code, Some(2), "{line}");
        assert!(
            line.contains(flag) && line.contains("profile default"),
            "{line}"
        );
        assert!(aws.ra.requests().is_empty() && aws.ecr.requests().is_empty());
    }
}

/// One run that must fail before or at CreateSession: exit 1, one line containing `needle`, and
/// ECR never called.
fn refused(aws: &Aws, args: Vec<String>, needle: &str) -> String {
    let out = aws
        .plugin()
        .args(args)
        .request(ApiVersion::V1, PRIVATE_HOST);
    let line = out.rejected();
    assert_eq!(out.exec.exit_code, Some(1), "{line}");
    assert!(line.contains(needle), "expected {needle:?} in: {line}");
    assert!(aws.ecr.requests().is_empty());
    line
}

#[test]
fn bad_certificates_and_keys_are_one_line_each_and_nothing_is_sent() {
    if !openssl_ready() {
        return;
    }
    let ca = Ca::new();
    let keys = Keys::new(Alg::P256);
    let other = Keys::new(Alg::P256);
    let aws = Aws::ok();
    let n = node(&keys, &ca, true);
    let day = 86_400;
    let now = unix_now();

    let expired = write(
        n.dir.path(),
        "expired.crt",
        &keys.certificate(&ca, now - 10 * day, now - day),
        0o644,
    );
    let line = refused(&aws, flags(&expired, &n.key), "has expired: valid from ");
    assert!(line.contains(&rfc3339(now - day)), "{line}");
    let future = write(
        n.dir.path(),
        "future.crt",
        &keys.certificate(&ca, now + day, now + 10 * day),
        0o644,
    );
    let line = refused(
        &aws,
        flags(&future, &n.key),
        "is not yet valid: valid from ",
    );
    assert!(
        line.contains(&rfc3339(now + day)) && line.contains("clock"),
        "{line}"
    );

    let foreign = write(n.dir.path(), "other.key", &other.pkcs8, 0o600);
    refused(
        &aws,
        flags(&n.cert, &foreign),
        "does not match the certificate",
    );
    let rsa = Keys::new(Alg::Rsa);
    let rsa_key = write(n.dir.path(), "rsa.key", &rsa.traditional, 0o600);
    refused(
        &aws,
        flags(&n.cert, &rsa_key),
        "does not match the certificate",
    );

    let readable = write(n.dir.path(), "readable.key", &keys.pkcs8, 0o644);
    refused(&aws, flags(&n.cert, &readable), "readable by no other user");

    let encrypted = write(n.dir.path(), "enc8.key", &keys.encrypted(true), 0o600);
    refused(
        &aws,
        flags(&n.cert, &encrypted),
        "is encrypted, which this provider does not use; supported: an unencrypted PEM file",
    );
    let encrypted = write(n.dir.path(), "enc1.key", &keys.encrypted(false), 0o600);
    refused(&aws, flags(&n.cert, &encrypted), "is encrypted");

    refused(
        &aws,
        flags(&n.cert, Path::new("pkcs11:token=node;object=key")),
        "is a PKCS#11 URI",
    );
    let tpm = write(
        n.dir.path(),
        "tpm.key",
        "-----BEGIN TSS2 PRIVATE KEY-----\nMAA=\n-----END TSS2 PRIVATE KEY-----\n",
        0o600,
    );
    refused(&aws, flags(&n.cert, &tpm), "is a TPM key (TSS2)");
    let p521 = Keys::new(Alg::P521);
    let p521_key = write(n.dir.path(), "p521.key", &p521.traditional, 0o600);
    refused(&aws, flags(&n.cert, &p521_key), "an EC key on curve P-521");
    assert!(aws.ra.requests().is_empty(), "{:?}", aws.ra.requests());
}

#[test]
fn create_session_refusals_and_failures_are_one_line() {
    if !openssl_ready() {
        return;
    }
    let ca = Ca::new();
    let keys = Keys::new(Alg::P384);
    let n = node(&keys, &ca, false);

    let denied = Aws::start(
        FakeResponse::new(403, r#"{"message":"Untrusted signing certificate"}"#)
            .header("content-type", "application/json")
            .header("x-amzn-errortype", "AccessDeniedException"),
    );
    let line = refused(
        &denied,
        flags(&n.cert, &n.key),
        "HTTP 403 AccessDeniedException: \"Untrusted signing certificate\"; check that the trust anchor holds the CA",
    );
    assert!(
        line.contains("IAM Roles Anywhere CreateSession at 127.0.0.1")
            && line.contains("certificate serial 47724914708969405121171"),
        "{line}"
    );
    assert_eq!(denied.ra.requests().len(), 1);

    let down = Aws::start(FakeResponse::new(503, "unavailable"));
    let line = refused(&down, flags(&n.cert, &n.key), "HTTP 503");
    assert!(line.contains("after 4 attempts"), "{line}");
    assert_eq!(down.ra.requests().len(), 4);

    let malformed = Aws::start(FakeResponse::new(201, r#"{"credentialSet":[]}"#));
    refused(
        &malformed,
        flags(&n.cert, &n.key),
        "answered HTTP 201 without usable credentials: the answer has no credentialSet[0].credentials",
    );
}

#[test]
fn cache_duration_follows_the_session_expiry() {
    if !openssl_ready() {
        return;
    }
    let ca = Ca::new();
    let keys = Keys::new(Alg::P256);
    let n = node(&keys, &ca, false);
    // The session ends in ten minutes, the ECR token in twelve hours: half the session.
    let aws = Aws::start(session(unix_now() + 600));
    let ok = aws
        .plugin()
        .args(flags(&n.cert, &n.key))
        .request(ApiVersion::V1, PRIVATE_HOST)
        .accepted();
    let d = ok.cache_duration.unwrap();
    assert!(
        d <= GoDuration::from_secs(300) && d >= GoDuration::from_secs(290),
        "{d}"
    );
}

#[test]
fn the_token_cache_answers_with_no_request_and_keys_on_the_certificate() {
    if !openssl_ready() {
        return;
    }
    let ca = Ca::new();
    let keys = Keys::new(Alg::P256);
    let n = node(&keys, &ca, true);
    let cache = TempDir::new("ra-cache");
    let aws = Aws::ok();
    let p = aws
        .plugin()
        .args(flags(&n.cert, &n.key))
        .args([format!("--token-cache-dir={}", cache.path().display())]);
    p.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    let hit = p.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    assert_eq!(hit.auth[PRIVATE_HOST].1, "roles-anywhere-pull-pass");
    assert_eq!((aws.ra.requests().len(), aws.ecr.requests().len()), (1, 1));

    // Key-only mode: no request; the key follows the certificate, never the key file's bytes.
    let key_of = |p: &Plugin| {
        let out = p
            .clone()
            .env("CREDENTIAL_PROVIDER_PRINT_CACHE_KEY", "true")
            .request(ApiVersion::V1, PRIVATE_HOST);
        assert_eq!(out.exec.exit_code, Some(0), "{}", out.stderr());
        let line: serde_json::Value = serde_json::from_str(out.stdout().trim()).unwrap();
        assert_eq!(line["kind"], "TokenCacheKey");
        line["key"].as_str().unwrap().to_owned()
    };
    let first = key_of(&p);
    assert_eq!(first, key_of(&p));
    assert!(!first.contains(&sha256_hex(keys.pkcs8.as_bytes())));
    let renewed = write(
        n.dir.path(),
        "renewed.crt",
        &keys.certificate(&ca, unix_now() - 60, unix_now() + 7200),
        0o644,
    );
    let other = aws.plugin().args(flags(&renewed, &n.key));
    assert_ne!(first, key_of(&other));
    assert_eq!((aws.ra.requests().len(), aws.ecr.requests().len()), (1, 1));
}
