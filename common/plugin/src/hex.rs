//! Lower-case hex, the one encoder for digests this project writes: the token cache's file names
//! and identity hashes, [`crate::signing`]'s hashes, and the `sha256sum` checksums of the
//! checker's `install`.

/// `bytes` as lower-case hex, two digits a byte. Called for every token-cache lookup, so it
/// writes digits directly rather than formatting each byte.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_is_lower_case_two_digits_per_byte() {
        assert_eq!(super::encode(&[0x00, 0x0f, 0xa5, 0xff, 0x10]), "000fa5ff10");
        assert_eq!(super::encode(&[]), "");
    }
}
