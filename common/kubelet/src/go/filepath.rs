//! Go's `path/filepath.Match` on Unix: `/` is the separator and a backslash escapes.
//!
//! The kubelet matches each dot-separated host label of a pattern against the image's with
//! `filepath.Match`. A glob crate would differ exactly where users trip: Go walks bytes (a `*`
//! may stop inside a multi-byte character), reports a malformed class as
//! `filepath.ErrBadPattern` (the kubelet then says no match) and, in current Go, checks the rest
//! of a pattern for syntax errors even after a mismatch.

use super::utf8::{RUNE_ERROR, decode_rune};

/// Go's `filepath.ErrBadPattern`: the glob is malformed.
#[derive(Debug, Clone, Copy, thiserror::Error, PartialEq, Eq)]
#[error("syntax error in pattern")]
pub struct BadPattern;

/// Go `filepath.Match` on bytes. Go walks strings byte by byte and decodes UTF-8 only for `?`
/// and `[...]`, so a `*` may stop inside a multi-byte character; working on bytes keeps that.
pub(crate) fn match_bytes(mut pattern: &[u8], mut name: &[u8]) -> Result<bool, BadPattern> {
    'pattern: while !pattern.is_empty() {
        let (star, chunk, rest) = scan_chunk(pattern);
        pattern = rest;
        if star && chunk.is_empty() {
            // A trailing '*' takes the rest of the name unless a separator is left.
            return Ok(!name.contains(&b'/'));
        }
        match match_chunk(chunk, name)? {
            // The last chunk must consume the whole name; otherwise a star may still help.
            Some(left) if left.is_empty() || !pattern.is_empty() => {
                name = left;
                continue;
            }
            _ => {}
        }
        if star {
            let candidates = name;
            for (i, &b) in candidates.iter().enumerate() {
                if b == b'/' {
                    break;
                }
                let skipped = candidates.get(i + 1..).unwrap_or_default();
                if let Some(left) = match_chunk(chunk, skipped)? {
                    if pattern.is_empty() && !left.is_empty() {
                        continue;
                    }
                    name = left;
                    continue 'pattern;
                }
            }
        }
        // A mismatch is only reported once the rest of the pattern is known to be well formed.
        while !pattern.is_empty() {
            let (_, chunk, rest) = scan_chunk(pattern);
            pattern = rest;
            match_chunk(chunk, b"")?;
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

/// Go `scanChunk`: leading stars, then everything up to the next star outside a class.
fn scan_chunk(pattern: &[u8]) -> (bool, &[u8], &[u8]) {
    let mut star = false;
    let mut pattern = pattern;
    while let Some((b'*', rest)) = pattern.split_first() {
        pattern = rest;
        star = true;
    }
    let mut in_range = false;
    let mut i = 0;
    while let Some(&c) = pattern.get(i) {
        match c {
            // The byte after a backslash is literal; a lone trailing one is caught later.
            b'\\' if i + 1 < pattern.len() => i += 1,
            b'[' => in_range = true,
            b']' => in_range = false,
            b'*' if !in_range => break,
            _ => {}
        }
        i += 1;
    }
    let (chunk, rest) = pattern.split_at(i.min(pattern.len()));
    (star, chunk, rest)
}

/// Go `matchChunk`: whether `chunk` (no stars) matches a prefix of `s`; returns what is left.
/// After a mismatch the rest of the chunk is still parsed so syntax errors are reported.
fn match_chunk<'s>(mut chunk: &[u8], mut s: &'s [u8]) -> Result<Option<&'s [u8]>, BadPattern> {
    let mut failed = false;
    while let Some((&c, after)) = chunk.split_first() {
        failed = failed || s.is_empty();
        match c {
            b'[' => {
                // Go leaves the rune at zero once the match has failed.
                let mut r = 0;
                if !failed {
                    let (rune, n) = decode_rune(s);
                    r = rune;
                    s = s.get(n..).unwrap_or_default();
                }
                chunk = after;
                let negated = chunk.first() == Some(&b'^');
                if negated {
                    chunk = chunk.get(1..).unwrap_or_default();
                }
                let mut matched = false;
                let mut ranges = 0;
                loop {
                    if ranges > 0
                        && let Some(rest) = chunk.strip_prefix(b"]")
                    {
                        chunk = rest;
                        break;
                    }
                    let (lo, rest) = get_esc(chunk)?;
                    chunk = rest;
                    let mut hi = lo;
                    if let Some(rest) = chunk.strip_prefix(b"-") {
                        let (h, rest) = get_esc(rest)?;
                        hi = h;
                        chunk = rest;
                    }
                    matched = matched || (lo <= r && r <= hi);
                    ranges += 1;
                }
                failed = failed || matched == negated;
            }
            b'?' => {
                if !failed {
                    failed = s.first() == Some(&b'/');
                    let (_, n) = decode_rune(s);
                    s = s.get(n..).unwrap_or_default();
                }
                chunk = after;
            }
            _ => {
                // A backslash makes the next byte literal; a trailing one is malformed.
                let (&literal, rest) = if c == b'\\' {
                    after.split_first().ok_or(BadPattern)?
                } else {
                    (&c, after)
                };
                if !failed {
                    failed = s.first() != Some(&literal);
                    s = s.get(1..).unwrap_or_default();
                }
                chunk = rest;
            }
        }
    }
    Ok(if failed { None } else { Some(s) })
}

/// Go `getEsc`: one possibly escaped character of a class, which must be followed by more.
fn get_esc(chunk: &[u8]) -> Result<(u32, &[u8]), BadPattern> {
    let chunk = match chunk.split_first() {
        None | Some((b'-' | b']', _)) => return Err(BadPattern),
        Some((b'\\', [])) => return Err(BadPattern),
        Some((b'\\', rest)) => rest,
        Some(_) => chunk,
    };
    let (r, n) = decode_rune(chunk);
    if r == RUNE_ERROR && n == 1 {
        return Err(BadPattern);
    }
    match chunk.get(n..) {
        Some(rest) if !rest.is_empty() => Ok((r, rest)),
        _ => Err(BadPattern),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables below are written for strings; Go's `filepath.Match` takes strings too.
    fn glob_match(pattern: &str, name: &str) -> Result<bool, BadPattern> {
        match_bytes(pattern.as_bytes(), name.as_bytes())
    }

    // Go src/path/filepath/match_test.go matchTests, in order.
    #[test]
    fn glob_match_go_vectors() {
        let ok = |b: bool| -> Result<bool, BadPattern> { Ok(b) };
        let bad: Result<bool, BadPattern> = Err(BadPattern);
        let rows: &[(&str, &str, Result<bool, BadPattern>)] = &[
            ("abc", "abc", ok(true)),
            ("*", "abc", ok(true)),
            ("*c", "abc", ok(true)),
            ("a*", "a", ok(true)),
            ("a*", "abc", ok(true)),
            ("a*", "ab/c", ok(false)),
            ("a*/b", "abc/b", ok(true)),
            ("a*/b", "a/c/b", ok(false)),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", ok(true)),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/f", ok(true)),
            ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", ok(false)),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/fff", ok(false)),
            ("a*b?c*x", "abxbbxdbxebxczzx", ok(true)),
            ("a*b?c*x", "abxbbxdbxebxczzy", ok(false)),
            ("ab[c]", "abc", ok(true)),
            ("ab[b-d]", "abc", ok(true)),
            ("ab[e-g]", "abc", ok(false)),
            ("ab[^c]", "abc", ok(false)),
            ("ab[^b-d]", "abc", ok(false)),
            ("ab[^e-g]", "abc", ok(true)),
            ("a\\*b", "a*b", ok(true)),
            ("a\\*b", "ab", ok(false)),
            ("a?b", "a☺b", ok(true)),
            ("a[^a]b", "a☺b", ok(true)),
            ("a???b", "a☺b", ok(false)),
            ("a[^a][^a][^a]b", "a☺b", ok(false)),
            ("[a-ζ]*", "α", ok(true)),
            ("*[a-ζ]", "A", ok(false)),
            ("a?b", "a/b", ok(false)),
            ("a*b", "a/b", ok(false)),
            ("[\\]a]", "]", ok(true)),
            ("[\\-]", "-", ok(true)),
            ("[x\\-]", "x", ok(true)),
            ("[x\\-]", "-", ok(true)),
            ("[x\\-]", "z", ok(false)),
            ("[\\-x]", "x", ok(true)),
            ("[\\-x]", "-", ok(true)),
            ("[\\-x]", "a", ok(false)),
            ("[]a]", "]", bad),
            ("[-]", "-", bad),
            ("[x-]", "x", bad),
            ("[x-]", "-", bad),
            ("[x-]", "z", bad),
            ("[-x]", "x", bad),
            ("[-x]", "-", bad),
            ("[-x]", "a", bad),
            ("\\", "a", bad),
            ("[a-b-c]", "a", bad),
            ("[", "a", bad),
            ("[^", "a", bad),
            ("[^bc", "a", bad),
            ("a[", "a", bad),
            ("a[", "ab", bad),
            ("a[", "x", bad),
            ("a/b[", "x", bad),
            ("*x", "xxx", ok(true)),
        ];
        assert_eq!(rows.len(), 56);
        for (i, &(pattern, name, want)) in rows.iter().enumerate() {
            assert_eq!(
                glob_match(pattern, name),
                want,
                "row {i}: {pattern:?} {name:?}"
            );
        }
    }

    #[test]
    fn glob_match_works_on_bytes_like_go() {
        // Go's star skips single bytes, so "[\u{FFFD}]" can match the tail byte of '☺'.
        assert_eq!(glob_match("*[\u{FFFD}]", "☺"), Ok(true));
        assert_eq!(glob_match("[\u{FFFD}]", "☺"), Ok(false));
        assert_eq!(glob_match("*?", "☺☺"), Ok(true));
        assert_eq!(glob_match("\\☺", "☺"), Ok(true));
        assert_eq!(glob_match("", ""), Ok(true));
        assert_eq!(glob_match("", "a"), Ok(false));
    }

    #[test]
    fn glob_match_checks_the_rest_of_the_pattern_after_a_mismatch() {
        // Current Go reports a malformed tail even when an earlier chunk already failed.
        assert_eq!(glob_match("x*\\", "a-"), Err(BadPattern));
        assert_eq!(glob_match("a*b*[", "x"), Err(BadPattern));
        assert_eq!(glob_match("a*b*[c]", "x"), Ok(false));
    }
}
