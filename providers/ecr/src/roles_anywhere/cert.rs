//! The node's X.509 certificate for IAM Roles Anywhere: PEM blocks read from files, the leaf's
//! serial number (decimal, as `Credential=` carries it), validity against the clock, public key
//! (what the private key must match) and SHA-256 (the token cache's identity, never the key).

use std::path::Path;
use std::time::SystemTime;

use x509_parser::prelude::{FromDer, X509Certificate};

use super::pem;

/// Certificates larger than this are not certificates a node holds (a bundle of a few CAs is
/// tens of kilobytes).
const MAX_CERT_FILE: u64 = 1024 * 1024;

/// OID of `rsaEncryption`.
const OID_RSA: &str = "1.2.840.113549.1.1.1";
/// OID of `id-ecPublicKey`.
const OID_EC: &str = "1.2.840.10045.2.1";
/// OID of the P-256 curve (`prime256v1`).
pub const OID_P256: &str = "1.2.840.10045.3.1.7";
/// OID of the P-384 curve (`secp384r1`).
pub const OID_P384: &str = "1.3.132.0.34";

/// The curves a key may be on: the ones IAM Roles Anywhere and the signing helper take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Curve {
    /// NIST P-256, signed with ring.
    P256,
    /// NIST P-384, signed with the `p384` crate (SHA-256 digest, which ring does not offer).
    P384,
}

impl Curve {
    /// The curve a named-curve OID names, if it is one we sign with.
    pub fn from_oid(oid: &str) -> Option<Curve> {
        match oid {
            OID_P256 => Some(Curve::P256),
            OID_P384 => Some(Curve::P384),
            _ => None,
        }
    }
}

/// A certificate's public key, as far as the private key must match it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicKey {
    /// `RSAPublicKey` DER (the SPKI's bit string).
    Rsa(Vec<u8>),
    /// A SEC1 point on a supported curve.
    Ec(Curve, Vec<u8>),
    /// Any other algorithm or curve (named for the error).
    Other(String),
}

/// The leaf certificate, parsed once.
#[derive(Debug, Clone)]
pub struct Certificate {
    /// DER, for `X-Amz-X509`.
    pub der: Vec<u8>,
    /// The serial number in decimal, for `Credential=`.
    pub serial: String,
    /// Validity start.
    pub not_before: SystemTime,
    /// Validity end.
    pub not_after: SystemTime,
    /// Checked against the private key before any request, so a mismatched pair fails locally.
    pub public_key: PublicKey,
    /// Lower-case hex SHA-256 of the DER: the certificate's identity in the token cache.
    pub sha256: String,
}

impl Certificate {
    /// Parses one DER certificate; `what` names it in errors.
    pub fn parse(der: Vec<u8>, what: &str) -> Result<Certificate, String> {
        let (_, cert) = X509Certificate::from_der(&der)
            .map_err(|e| format!("{what} is not a valid X.509 certificate ({e})"))?;
        let time = |t: i64| kcp_plugin::time::from_unix_secs(t).unwrap_or(SystemTime::UNIX_EPOCH);
        let validity = cert.validity();
        let not_before = time(validity.not_before.timestamp());
        let not_after = time(validity.not_after.timestamp());
        let serial = decimal(cert.raw_serial());
        let spki = cert.public_key();
        let algorithm = spki.algorithm.algorithm.to_id_string();
        let data = spki.subject_public_key.data.to_vec();
        let public_key = match algorithm.as_str() {
            OID_RSA => PublicKey::Rsa(data),
            OID_EC => {
                let curve = spki
                    .algorithm
                    .parameters
                    .as_ref()
                    .and_then(|p| p.as_oid().ok())
                    .map(|oid| oid.to_id_string())
                    .unwrap_or_default();
                match Curve::from_oid(&curve) {
                    Some(c) => PublicKey::Ec(c, data),
                    None => PublicKey::Other(format!("an EC key on curve {curve}")),
                }
            }
            other => PublicKey::Other(format!("a key of algorithm {other}")),
        };
        let digest = ring::digest::digest(&ring::digest::SHA256, &der);
        Ok(Certificate {
            sha256: kcp_plugin::hex::encode(digest.as_ref()),
            der,
            serial,
            not_before,
            not_after,
            public_key,
        })
    }

    /// Refuses a certificate outside its validity at `now`, with both dates: the service would
    /// refuse it too, after a round trip and with a less helpful message.
    pub fn check_validity(&self, now: SystemTime, path: &Path) -> Result<(), String> {
        let dates = format!(
            "valid from {} to {}",
            rfc3339(self.not_before),
            rfc3339(self.not_after)
        );
        if now < self.not_before {
            return Err(format!(
                "the IAM Roles Anywhere certificate {} (serial {}) is not yet valid: {dates}, and the node's clock says {}; check the node's clock or wait",
                path.display(),
                self.serial,
                rfc3339(now)
            ));
        }
        if now > self.not_after {
            return Err(format!(
                "the IAM Roles Anywhere certificate {} (serial {}) has expired: {dates}, and the node's clock says {}; renew it",
                path.display(),
                self.serial,
                rfc3339(now)
            ));
        }
        Ok(())
    }
}

/// Reads the certificates of a PEM file (`CERTIFICATE` blocks only), at least one.
pub fn read_pem_file(path: &Path, what: &str) -> Result<Vec<Vec<u8>>, String> {
    let text = read_text(path, what)?;
    let blocks =
        pem::blocks(&text).map_err(|e| format!("{what} {} is not PEM: {e}", path.display()))?;
    if blocks.is_empty() {
        return Err(format!(
            "{what} {} holds no PEM CERTIFICATE block",
            path.display()
        ));
    }
    blocks
        .into_iter()
        .map(|b| {
            if b.label == "CERTIFICATE" {
                Ok(b.der)
            } else {
                Err(format!(
                    "{what} {} holds a {} block where only CERTIFICATE blocks belong",
                    path.display(),
                    b.label
                ))
            }
        })
        .collect()
}

/// A certificate file's text (certificates are public: no owner or mode check).
fn read_text(path: &Path, what: &str) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path)
        .map_err(|e| format!("cannot read {what} {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_CERT_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {what} {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_CERT_FILE {
        return Err(format!(
            "{what} {} is larger than {MAX_CERT_FILE} bytes",
            path.display()
        ));
    }
    String::from_utf8(bytes).map_err(|_| format!("{what} {} is not PEM text", path.display()))
}

/// A big-endian unsigned integer (a serial number's content octets) in decimal.
pub fn decimal(bytes: &[u8]) -> String {
    let mut digits: Vec<u8> = Vec::new(); // little-endian base 10
    for &byte in bytes {
        let mut carry = u32::from(byte);
        for d in &mut digits {
            let v = u32::from(*d) * 256 + carry;
            *d = (v % 10) as u8;
            carry = v / 10;
        }
        while carry > 0 {
            digits.push((carry % 10) as u8);
            carry /= 10;
        }
    }
    if digits.is_empty() {
        return "0".to_owned();
    }
    digits.iter().rev().map(|d| char::from(b'0' + d)).collect()
}

/// `2026-01-02T03:04:05Z`, for messages and the signature's date.
pub fn rfc3339(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// `20260102T030405Z`, SigV4's `X-Amz-Date`.
pub fn amz_date(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

/// UTC calendar fields of `t` (before 1970 reads as 1970).
fn civil(t: SystemTime) -> (i64, u32, u32, u32, u32, u32) {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 2));
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Days to civil date (proleptic Gregorian), era-based.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let small = |v: i64| u32::try_from(v).unwrap_or(0);
    (
        year,
        small(month),
        small(day),
        small(rem / 3600),
        small(rem % 3600 / 60),
        small(rem % 60),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serials_read_in_decimal() {
        assert_eq!(decimal(&[]), "0");
        assert_eq!(decimal(&[0]), "0");
        assert_eq!(decimal(&[0x01, 0x00]), "256");
        assert_eq!(
            decimal(&[0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            "18446744073709551615"
        );
        // 2^128.
        let mut big = vec![1u8];
        big.extend([0u8; 16]);
        assert_eq!(decimal(&big), "340282366920938463463374607431768211456");
    }

    #[test]
    fn dates_are_utc_calendar_fields() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_795_000_000);
        assert_eq!(rfc3339(t), "2026-11-18T11:06:40Z");
        assert_eq!(amz_date(t), "20261118T110640Z");
        let leap = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }
}
