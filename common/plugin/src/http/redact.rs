//! What of an answer's body may reach a log line: a short one-line excerpt with every known
//! secret and every token-like run replaced.

/// A short one-line excerpt of an error body, for diagnostics. Every secret this process holds
/// (`kcp_kubelet::secret::redact_known`: exact values, so an AWS secret key with `/` too) and
/// then every token-like run is redacted before the cut, so a body that quotes the token it
/// rejects (or a fragment of it) cannot carry it into a log line.
pub(super) fn excerpt(body: &[u8]) -> String {
    const MAX: usize = 200;
    let text = String::from_utf8_lossy(body);
    let known = kcp_kubelet::secret::redact_known(&text);
    let line = redact_token_like(&crate::logging::one_line(&known));
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// Shortest run of token characters that [`redact_token_like`] replaces. Words of error
/// messages, host names (split at dots) and UUIDs (36) are shorter; access tokens, JWT segments,
/// keys and signatures are longer.
pub const TOKEN_RUN_MIN: usize = 40;

/// Replaces every run of at least [`TOKEN_RUN_MIN`] characters from `[A-Za-z0-9_+=-]` (the
/// base64 and base64url alphabets without `/`) with `<redacted>`.
pub fn redact_token_like(text: &str) -> String {
    let is_token_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '=');
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= TOKEN_RUN_MIN {
            out.push_str(kcp_kubelet::secret::REDACTED);
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if is_token_char(c) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}
