//! SHA-256 as `sha256sum` prints it: `install` records the checksum of every file it writes in
//! the same format as `scripts/install`, to tell its own files from foreign ones.

/// The SHA-256 of `data`, as 64 lowercase hex digits: ring's digest, as the providers' token
/// cache uses, and the hex encoder the workspace shares.
pub fn hex(data: &[u8]) -> String {
    kcp_plugin::hex::encode(ring::digest::digest(&ring::digest::SHA256, data).as_ref())
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_answers() {
        assert_eq!(
            super::hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            super::hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
