//! Go's `net.SplitHostPort`.
//!
//! The kubelet's `SplitURL` splits a parsed host into name and port with it and, when it fails,
//! keeps the whole host as the name with no port. Which strings fail decides how many
//! dot-separated labels a pattern has and whether its port matches, so the rules (brackets only
//! around the whole host, one colon outside them) are copied as Go has them.

/// Go `net.SplitHostPort`; `None` stands for any of its errors (the kubelet ignores which).
pub(crate) fn split_host_port(hostport: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = hostport.iter().rposition(|&b| b == b':')?;
    let (host, scan_open_from, scan_close_from) = if hostport.first() == Some(&b'[') {
        let end = hostport.iter().position(|&b| b == b']')?;
        // The ']' must sit right before the last colon.
        if end + 1 != colon {
            return None;
        }
        (hostport.get(1..end)?, 1, end + 1)
    } else {
        let host = hostport.get(..colon)?;
        if host.contains(&b':') {
            return None;
        }
        (host, 0, 0)
    };
    if hostport.get(scan_open_from..)?.contains(&b'[') {
        return None;
    }
    if hostport.get(scan_close_from..)?.contains(&b']') {
        return None;
    }
    Some((host, hostport.get(colon + 1..)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_host_port_follows_go() {
        let rows: &[(&str, Option<(&str, &str)>)] = &[
            ("host:80", Some(("host", "80"))),
            ("host:", Some(("host", ""))),
            ("host", None),
            ("a:b:c", None),
            ("[::1]:80", Some(("::1", "80"))),
            ("[::1]", None),
            ("[::1]:", Some(("::1", ""))),
            ("[::1]x:80", None),
            ("[a]:b:80", None),
            ("a[b:80", None),
            ("a]b:80", None),
            ("", None),
        ];
        for &(hostport, want) in rows {
            let got = split_host_port(hostport.as_bytes());
            let want = want.map(|(h, p)| (h.as_bytes(), p.as_bytes()));
            assert_eq!(got, want, "{hostport:?}");
        }
    }
}
