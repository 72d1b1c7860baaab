//! Go's `unicode/utf8.DecodeRune`.
//!
//! Go strings are bytes. `filepath.Match` and `strconv.Quote` decode a rune only where they need
//! one and take an invalid byte as U+FFFD of width 1, so a glob or an error text can hold bytes
//! that are not UTF-8 (percent-decoding makes such bytes). Rust's `str` cannot, hence this.

/// Go `utf8.RuneError`, U+FFFD.
pub(crate) const RUNE_ERROR: u32 = 0xFFFD;

/// Go `utf8.DecodeRune`: invalid or truncated input gives (U+FFFD, 1), empty input (U+FFFD, 0).
pub(crate) fn decode_rune(s: &[u8]) -> (u32, usize) {
    let Some(&first) = s.first() else {
        return (RUNE_ERROR, 0);
    };
    let width = match first {
        0x00..=0x7f => return (u32::from(first), 1),
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return (RUNE_ERROR, 1),
    };
    match s
        .get(..width)
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .and_then(|text| text.chars().next())
    {
        Some(c) => (u32::from(c), width),
        None => (RUNE_ERROR, 1),
    }
}
