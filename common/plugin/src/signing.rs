//! What the request signatures of hand-signed APIs share: the X.509 variant of AWS SigV4 (IAM
//! Roles Anywhere, `providers/ecr`) and Alibaba Cloud's V3 (`providers/alibaba`) both build a
//! canonical request from RFC 3986-encoded parts and hash it, and its body, with SHA-256.

use std::fmt::Write;

/// RFC 3986 percent-encoding as both signatures want it: `A-Z a-z 0-9 - _ . ~` kept, every other
/// byte of the UTF-8 text `%XX` in upper case (a space is `%20`, never `+`). The URL sent must be
/// encoded the same way as its canonical request.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// Lower-case hex SHA-256 of `bytes`: a body's hash, a canonical request's.
pub fn sha256_hex(bytes: &[u8]) -> String {
    crate::hex::encode(ring::digest::digest(&ring::digest::SHA256, bytes).as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreserved_characters_stay_and_the_rest_is_upper_case_hex() {
        assert_eq!(percent_encode("aZ09-_.~"), "aZ09-_.~");
        assert_eq!(percent_encode("a b+c/d*e=ä"), "a%20b%2Bc%2Fd%2Ae%3D%C3%A4");
        assert_eq!(percent_encode(""), "");
    }

    #[test]
    fn sha256_of_nothing_is_the_well_known_digest() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
