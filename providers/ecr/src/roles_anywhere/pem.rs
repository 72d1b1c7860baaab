//! PEM as certificate and key files hold it: `-----BEGIN <label>-----` blocks, RFC 1421
//! headers (`Proc-Type: 4,ENCRYPTED` marks an OpenSSL-encrypted key) and base64 bodies. Text
//! outside blocks is ignored, as OpenSSL does.

use base64::Engine;

/// One PEM block.
pub struct Block {
    /// The label, e.g. `CERTIFICATE`, `RSA PRIVATE KEY`.
    pub label: String,
    /// Whether its headers say `Proc-Type: 4,ENCRYPTED`.
    pub encrypted: bool,
    /// The decoded body.
    pub der: Vec<u8>,
}

/// Every block of `text`, in order. A block that does not end, or whose body is not base64, is
/// an error (which never quotes the body: it may be a key).
pub fn blocks(text: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        let Some(label) = line
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.strip_suffix("-----"))
        else {
            continue;
        };
        let end = format!("-----END {label}-----");
        let mut body = String::new();
        let mut encrypted = false;
        let mut ended = false;
        for line in lines.by_ref() {
            if line == end {
                ended = true;
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.trim().eq_ignore_ascii_case("Proc-Type")
                    && value.to_ascii_uppercase().contains("ENCRYPTED")
                {
                    encrypted = true;
                }
                continue;
            }
            body.push_str(line);
        }
        if !ended {
            return Err(format!("its {label} block has no END line"));
        }
        let der = base64::engine::general_purpose::STANDARD
            .decode(body.as_bytes())
            .map_err(|_| format!("its {label} block is not valid base64"))?;
        out.push(Block {
            label: label.to_owned(),
            encrypted,
            der,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_labels_and_encryption_headers_are_read() {
        let text = "junk\n-----BEGIN A B-----\nAAEC\n-----END A B-----\n-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAw==\n-----END RSA PRIVATE KEY-----\n";
        let b = blocks(text).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(
            (b[0].label.as_str(), b[0].encrypted, b[0].der.as_slice()),
            ("A B", false, &[0u8, 1, 2][..])
        );
        assert_eq!(
            (b[1].label.as_str(), b[1].encrypted, b[1].der.as_slice()),
            ("RSA PRIVATE KEY", true, &[3u8][..])
        );
        assert!(blocks("-----BEGIN X-----\nAA\n").is_err());
        assert!(blocks("-----BEGIN X-----\n!!\n-----END X-----").is_err());
        assert!(blocks("no pem").unwrap().is_empty());
    }
}
