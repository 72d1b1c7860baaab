//! The node's private key for IAM Roles Anywhere: read only from a file of the running user that
//! nobody else may read (the token cache's checks, `kcp_plugin::safe_file`), parsed from PEM
//! (RSA as PKCS#1 or PKCS#8, EC P-256/P-384 as SEC1 or PKCS#8), matched against the
//! certificate, and turned into the signer of the X.509 SigV4 signature. Anything else
//! (encrypted keys, PKCS#11 URIs, TPM keys, other curves) is refused with one line naming what
//! is supported. No message here ever quotes the key.

use std::path::Path;

use p384::ecdsa::signature::hazmat::PrehashSigner;
use ring::rand::SystemRandom;
use ring::signature::{self as rs, EcdsaKeyPair, RsaKeyPair};

use super::cert::{Curve, PublicKey};
use super::pem;

/// What every refusal says is supported.
pub const SUPPORTED: &str = "supported: an unencrypted PEM file with an RSA key (PKCS#1 \"RSA PRIVATE KEY\" or PKCS#8 \"PRIVATE KEY\") or an EC P-256 or P-384 key (SEC1 \"EC PRIVATE KEY\" or PKCS#8 \"PRIVATE KEY\")";

/// A key file larger than this is no key.
const MAX_KEY_FILE: u64 = 64 * 1024;

/// OID of `rsaEncryption`.
const OID_RSA: &str = "1.2.840.113549.1.1.1";
/// OID of `id-ecPublicKey`.
const OID_EC: &str = "1.2.840.10045.2.1";

/// The signing half of the X.509 SigV4: which algorithm the `Authorization` header names and the
/// key that signs.
pub enum Signer {
    /// RSA PKCS#1 v1.5 over SHA-256 (ring).
    Rsa(RsaKeyPair),
    /// ECDSA P-256 over SHA-256, DER (ring).
    P256(EcdsaKeyPair),
    /// ECDSA P-384 over SHA-256, DER: the signing helper hashes with SHA-256 for every curve, and
    /// ring signs P-384 only over SHA-384, so the `p384` crate signs the SHA-256 prehash.
    P384(Box<p384::ecdsa::SigningKey>),
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.algorithm())
    }
}

impl Signer {
    /// The algorithm name of the `Authorization` header and the string to sign.
    pub fn algorithm(&self) -> &'static str {
        match self {
            Signer::Rsa(_) => "AWS4-X509-RSA-SHA256",
            Signer::P256(_) | Signer::P384(_) => "AWS4-X509-ECDSA-SHA256",
        }
    }

    /// The private key's signature over `message` (SHA-256 digest; RSA PKCS#1 v1.5, or ECDSA as
    /// DER `Ecdsa-Sig-Value`).
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, String> {
        let rng = SystemRandom::new();
        match self {
            Signer::Rsa(key) => {
                let mut signature = vec![0; key.public().modulus_len()];
                key.sign(&rs::RSA_PKCS1_SHA256, &rng, message, &mut signature)
                    .map_err(|_| "RSA signing failed".to_owned())?;
                Ok(signature)
            }
            Signer::P256(key) => key
                .sign(&rng, message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| "ECDSA P-256 signing failed".to_owned()),
            Signer::P384(key) => {
                let digest = ring::digest::digest(&ring::digest::SHA256, message);
                let signature: p384::ecdsa::Signature = key
                    .sign_prehash(digest.as_ref())
                    .map_err(|_| "ECDSA P-384 signing failed".to_owned())?;
                let (r, s) = signature.split_bytes();
                Ok(ecdsa_sig_value(&r, &s))
            }
        }
    }
}

/// Reads the key at `path` and returns its signer, after checking that it belongs to
/// `certificate` (`certificate_path` names it in the error).
pub fn load(
    path: &Path,
    certificate: &PublicKey,
    certificate_path: &Path,
) -> Result<Signer, String> {
    let file = KeyFile {
        key: path,
        certificate: certificate_path,
    };
    let text = file.read_text()?;
    let blocks = pem::blocks(&text).map_err(|e| {
        format!(
            "the IAM Roles Anywhere private key {} is not valid PEM ({e}); {SUPPORTED}",
            file.shown()
        )
    })?;
    let parsed = file.parse(&blocks)?;
    if let PublicKey::Other(what) = certificate {
        return Err(format!(
            "the IAM Roles Anywhere certificate {} holds {what}; the certificate must hold an RSA, EC P-256 or EC P-384 key",
            certificate_path.display()
        ));
    }
    match parsed {
        Parsed::RsaPkcs1(der) => file.rsa(RsaKeyPair::from_der(der), certificate),
        Parsed::RsaPkcs8(der) => file.rsa(RsaKeyPair::from_pkcs8(der), certificate),
        Parsed::Ec {
            curve,
            scalar,
            public,
        } => {
            let PublicKey::Ec(cert_curve, cert_point) = certificate else {
                return Err(file.mismatch());
            };
            if *cert_curve != curve {
                return Err(file.mismatch());
            }
            match curve {
                Curve::P256 => file.p256(scalar, public, cert_point),
                Curve::P384 => file.p384(scalar, public, cert_point),
            }
        }
    }
}

/// The key file and the certificate it must belong to: the steps of [`load`], and the errors
/// they give, each naming the file it is about.
struct KeyFile<'a> {
    /// The private key file.
    key: &'a Path,
    /// The certificate the key must belong to.
    certificate: &'a Path,
}

impl KeyFile<'_> {
    /// The key file's path as errors show it.
    fn shown(&self) -> std::path::Display<'_> {
        self.key.display()
    }

    /// The key file's text: never a PKCS#11 URI, only a file of the running user that nobody
    /// else may read, and UTF-8 (PEM).
    fn read_text(&self) -> Result<String, String> {
        let (path, shown) = (self.key, self.shown());
        if path.to_string_lossy().starts_with("pkcs11:") {
            return Err(format!(
                "the IAM Roles Anywhere private key {shown} is a PKCS#11 URI, which this provider does not use; {SUPPORTED}"
            ));
        }
        let owner = kcp_plugin::safe_file::current_owner();
        let bytes = match kcp_plugin::safe_file::read_owned_file(path, &owner, MAX_KEY_FILE) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return Err(format!(
                    "the IAM Roles Anywhere private key {shown} does not exist"
                ));
            }
            Err(reason) => {
                return Err(format!(
                    "the IAM Roles Anywhere private key {shown} is refused: {reason}; it must be a regular file owned by the user running the provider and readable by no other user (chmod 600)"
                ));
            }
        };
        String::from_utf8(bytes).map_err(|_| {
            format!("the IAM Roles Anywhere private key {shown} is not PEM text; {SUPPORTED}")
        })
    }

    /// The file's first private key block, parsed by its label; encrypted keys, TPM keys and
    /// other kinds of block are refused.
    fn parse<'b>(&self, blocks: &'b [pem::Block]) -> Result<Parsed<'b>, String> {
        let Some(block) = blocks.iter().find(|b| b.label.ends_with("PRIVATE KEY")) else {
            return Err(format!(
                "the IAM Roles Anywhere private key {} holds no PEM private key block; {SUPPORTED}",
                self.shown()
            ));
        };
        let refuse = |what: &str| self.refuse(what);
        if block.encrypted || block.label == "ENCRYPTED PRIVATE KEY" {
            return Err(refuse("encrypted"));
        }
        match block.label.as_str() {
            "RSA PRIVATE KEY" => Ok(Parsed::RsaPkcs1(&block.der)),
            "EC PRIVATE KEY" => sec1(&block.der, None).map_err(|e| refuse(&e)),
            "PRIVATE KEY" => pkcs8(&block.der).map_err(|e| refuse(&e)),
            "TSS2 PRIVATE KEY" => Err(refuse("a TPM key (TSS2)")),
            other => Err(refuse(&format!("a {other:?} block"))),
        }
    }

    /// An RSA key's signer (`key` as ring read it from either form), when its public half is the
    /// certificate's.
    fn rsa(
        &self,
        key: Result<RsaKeyPair, ring::error::KeyRejected>,
        certificate: &PublicKey,
    ) -> Result<Signer, String> {
        let key = key.map_err(|e| self.invalid(&format!("RSA: {e}")))?;
        match certificate {
            PublicKey::Rsa(public) if public.as_slice() == key.public().as_ref() => {
                Ok(Signer::Rsa(key))
            }
            _ => Err(self.mismatch()),
        }
    }

    /// A P-256 key's signer (ring): its own public point, when the file has one, must be its
    /// private scalar's, and the certificate's point must be too.
    fn p256(
        &self,
        scalar: &[u8],
        public: Option<&[u8]>,
        cert_point: &[u8],
    ) -> Result<Signer, String> {
        let rng = SystemRandom::new();
        let alg = &rs::ECDSA_P256_SHA256_ASN1_SIGNING;
        if let Some(own) = public {
            EcdsaKeyPair::from_private_key_and_public_key(alg, scalar, own, &rng)
                .map_err(|e| self.invalid(&format!("EC P-256: {e}")))?;
        }
        // ring checks that the pair is consistent: with the certificate's point, that is the
        // match.
        EcdsaKeyPair::from_private_key_and_public_key(alg, scalar, cert_point, &rng)
            .map(Signer::P256)
            .map_err(|_| self.mismatch())
    }

    /// A P-384 key's signer (the `p384` crate), with the same two checks as [`Self::p256`], the
    /// points compared in the form (compressed or not) each is written in.
    fn p384(
        &self,
        scalar: &[u8],
        public: Option<&[u8]>,
        cert_point: &[u8],
    ) -> Result<Signer, String> {
        let key = p384::ecdsa::SigningKey::from_slice(scalar)
            .map_err(|_| self.invalid("EC P-384: the private scalar is out of range"))?;
        let point = |compress: bool| {
            key.verifying_key()
                .to_sec1_point(compress)
                .as_bytes()
                .to_vec()
        };
        if let Some(own) = public
            && own != point(own.len() == 49).as_slice()
        {
            return Err(self.invalid("EC P-384: its public key is not its private key's"));
        }
        if *cert_point == point(cert_point.len() == 49) {
            Ok(Signer::P384(Box::new(key)))
        } else {
            Err(self.mismatch())
        }
    }

    /// A kind of key this provider does not use.
    fn refuse(&self, what: &str) -> String {
        format!(
            "the IAM Roles Anywhere private key {} is {what}, which this provider does not use; {SUPPORTED}",
            self.shown()
        )
    }

    /// A key that is not the certificate's.
    fn mismatch(&self) -> String {
        format!(
            "the IAM Roles Anywhere private key {} does not match the certificate {}: give the key the certificate was issued for",
            self.shown(),
            self.certificate.display()
        )
    }

    /// A key of a supported kind that does not hold together.
    fn invalid(&self, why: &str) -> String {
        format!(
            "the IAM Roles Anywhere private key {} is not a valid key ({why}); {SUPPORTED}",
            self.shown()
        )
    }
}

/// A key as parsed from its PEM block, before it is matched.
enum Parsed<'a> {
    /// `RSAPrivateKey` DER.
    RsaPkcs1(&'a [u8]),
    /// PKCS#8 `PrivateKeyInfo` DER of an RSA key.
    RsaPkcs8(&'a [u8]),
    /// An EC key: the curve, the private scalar and the public point when the file has it.
    Ec {
        curve: Curve,
        scalar: &'a [u8],
        public: Option<&'a [u8]>,
    },
}

/// PKCS#8 `PrivateKeyInfo`: RSA or an EC key on a supported curve.
fn pkcs8(der: &[u8]) -> Result<Parsed<'_>, String> {
    let bad = || "an unreadable PKCS#8 key".to_owned();
    let (tag, info, _) = tlv(der).ok_or_else(bad)?;
    if tag != 0x30 {
        return Err(bad());
    }
    let (_version_tag, _version, rest) = tlv(info).ok_or_else(bad)?;
    let (tag, algorithm, rest) = tlv(rest).ok_or_else(bad)?;
    if tag != 0x30 {
        return Err(bad());
    }
    let (tag, oid, params) = tlv(algorithm).ok_or_else(bad)?;
    if tag != 0x06 {
        return Err(bad());
    }
    let (tag, private_key, _) = tlv(rest).ok_or_else(bad)?;
    if tag != 0x04 {
        return Err(bad());
    }
    match oid_string(oid).as_str() {
        OID_RSA => Ok(Parsed::RsaPkcs8(der)),
        OID_EC => {
            let curve = tlv(params)
                .filter(|(tag, _, _)| *tag == 0x06)
                .map(|(_, oid, _)| oid_string(oid))
                .ok_or_else(bad)?;
            sec1(private_key, Some(&curve))
        }
        "1.3.101.112" => Err("an Ed25519 key".to_owned()),
        "1.3.101.113" => Err("an Ed448 key".to_owned()),
        "1.2.840.113549.1.1.10" => Err("an RSA-PSS key".to_owned()),
        other => Err(format!("a key of algorithm {other}")),
    }
}

/// SEC1 `ECPrivateKey`; `curve` is the PKCS#8 wrapper's when there is one.
fn sec1<'a>(der: &'a [u8], curve: Option<&str>) -> Result<Parsed<'a>, String> {
    let bad = || "an unreadable EC key".to_owned();
    let (tag, body, _) = tlv(der).ok_or_else(bad)?;
    if tag != 0x30 {
        return Err(bad());
    }
    let (_, _version, rest) = tlv(body).ok_or_else(bad)?;
    let (tag, scalar, mut rest) = tlv(rest).ok_or_else(bad)?;
    if tag != 0x04 {
        return Err(bad());
    }
    let mut named = curve.map(str::to_owned);
    let mut public = None;
    while let Some((tag, content, next)) = tlv(rest) {
        match tag {
            0xa0 => {
                let (_, oid, _) = tlv(content).filter(|t| t.0 == 0x06).ok_or_else(bad)?;
                named.get_or_insert_with(|| oid_string(oid));
            }
            0xa1 => {
                let (_, bits, _) = tlv(content).filter(|t| t.0 == 0x03).ok_or_else(bad)?;
                // The first octet of a BIT STRING counts unused bits (0 for a point).
                public = bits.split_first().map(|(_, point)| point);
            }
            _ => {}
        }
        rest = next;
    }
    let named = named.ok_or_else(|| "an EC key that names no curve".to_owned())?;
    let curve = Curve::from_oid(&named).ok_or_else(|| {
        let name = match named.as_str() {
            "1.3.132.0.35" => "P-521".to_owned(),
            "1.3.132.0.10" => "secp256k1".to_owned(),
            other => other.to_owned(),
        };
        format!("an EC key on curve {name}")
    })?;
    Ok(Parsed::Ec {
        curve,
        scalar,
        public,
    })
}

/// One DER TLV: (tag, content, rest). Definite lengths only, up to four length octets.
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// An OID's content octets as dotted decimal.
fn oid_string(oid: &[u8]) -> String {
    let mut parts: Vec<u64> = Vec::new();
    let mut value: u64 = 0;
    for &b in oid {
        value = (value << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            if parts.is_empty() {
                let first = (value / 40).min(2);
                parts.push(first);
                parts.push(value - first * 40);
            } else {
                parts.push(value);
            }
            value = 0;
        }
    }
    parts
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// DER `Ecdsa-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }` from big-endian `r` and `s`.
fn ecdsa_sig_value(r: &[u8], s: &[u8]) -> Vec<u8> {
    fn integer(bytes: &[u8]) -> Vec<u8> {
        let trimmed = match bytes.iter().position(|&b| b != 0) {
            Some(i) => &bytes[i..],
            None => &[0u8][..],
        };
        let mut out = vec![0x02];
        let pad = trimmed[0] & 0x80 != 0;
        push_len(&mut out, trimmed.len() + usize::from(pad));
        if pad {
            out.push(0);
        }
        out.extend_from_slice(trimmed);
        out
    }
    fn push_len(out: &mut Vec<u8>, len: usize) {
        // At most 2 + 49 octets per integer: one length octet, or 0x81 and one.
        if len < 0x80 {
            out.push(len as u8);
        } else {
            out.push(0x81);
            out.push(len as u8);
        }
    }
    let body: Vec<u8> = [integer(r), integer(s)].concat();
    let mut out = vec![0x30];
    push_len(&mut out, body.len());
    out.extend(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oids_and_tlvs_are_read() {
        assert_eq!(
            oid_string(&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]),
            "1.2.840.10045.3.1.7"
        );
        assert_eq!(oid_string(&[0x2b, 0x81, 0x04, 0x00, 0x22]), "1.3.132.0.34");
        assert_eq!(
            tlv(&[0x04, 0x02, 1, 2, 9]),
            Some((0x04, &[1u8, 2][..], &[9u8][..]))
        );
        assert_eq!(
            tlv(&[0x04, 0x81, 0x01, 7]),
            Some((0x04, &[7u8][..], &[][..]))
        );
        assert_eq!(tlv(&[0x04, 0x03, 1]), None);
        assert_eq!(tlv(&[0x04, 0x80]), None);
    }

    #[test]
    fn ecdsa_signature_integers_are_minimal_and_positive() {
        let mut r = [0u8; 48];
        r[47] = 1;
        let s = [0x80u8; 48];
        let der = ecdsa_sig_value(&r, &s);
        assert_eq!(&der[..5], &[0x30, 3 + 2 + 49, 0x02, 0x01, 0x01]);
        assert_eq!(&der[5..8], &[0x02, 49, 0x00]);
        assert_eq!(der.len(), 2 + 3 + 51);
    }
}
