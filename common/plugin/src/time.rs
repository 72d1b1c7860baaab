//! Dates and Unix seconds: the one place that turns the timestamps servers send into
//! [`SystemTime`].
//!
//! - [`days_from_civil`]: the proleptic Gregorian calendar, once, for every parser here.
//! - [`parse_http_date`]: an HTTP `Date` (also `Retry-After`'s date form, see
//!   [`crate::retry::retry_after`]).
//! - [`parse_rfc3339`]: RFC 3339 times, such as IAM Credentials' `expireTime`.
//! - [`unix_secs`] and [`from_unix_secs`]: whole Unix seconds, as the token cache stores times and
//!   as `cacheDuration` is counted ([`crate::cache_hint`]).
//!
//! Every input may come from the network: arithmetic is checked, out-of-range or malformed input
//! gives `None`, nothing panics.

use std::time::{Duration, SystemTime};

const SECS_PER_DAY: i64 = 86_400;

/// Seconds since the Unix epoch, negative before it: whole seconds on both sides of a
/// `cacheDuration`, as Go's `Time.Unix()`, and the token cache's stored times.
pub fn unix_secs(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// The [`SystemTime`] `secs` whole seconds after the Unix epoch (before it when negative), or
/// `None` when the platform cannot represent it.
pub fn from_unix_secs(secs: i64) -> Option<SystemTime> {
    let magnitude = Duration::from_secs(secs.unsigned_abs());
    if secs >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(magnitude)
    } else {
        SystemTime::UNIX_EPOCH.checked_sub(magnitude)
    }
}

/// Whether `year` is a leap year of the proleptic Gregorian calendar.
pub fn is_leap_year(year: i64) -> bool {
    year.rem_euclid(4) == 0 && (year.rem_euclid(100) != 0 || year.rem_euclid(400) == 0)
}

/// Days in `month` (1–12) of `year`; 0 for a month that does not exist.
fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap_year(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (negative before it), or
/// `None` for a date that does not exist (month 13, 30 February) or whose count overflows.
///
/// Howard Hinnant's `days_from_civil`: years counted from 1 March, so the leap day ends a year,
/// in 400-year eras of 146 097 days.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> Option<i64> {
    if day == 0 || day > days_in_month(year, month) {
        return None;
    }
    let (month, day) = (i64::from(month), i64::from(day));
    let y = if month <= 2 {
        year.checked_sub(1)?
    } else {
        year
    };
    let era = y.div_euclid(400);
    let year_of_era = y.rem_euclid(400);
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era.checked_mul(146_097)?
        .checked_add(day_of_era)?
        .checked_sub(719_468)
}

/// Unix seconds of a civil date and time of day (UTC); a leap second (`:60`) counts as the first
/// second of the next minute.
fn civil_secs(year: i64, month: u32, day: u32, hour: u32, minute: u32, second: u32) -> Option<i64> {
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let time_of_day = i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second);
    days_from_civil(year, month, day)?
        .checked_mul(SECS_PER_DAY)?
        .checked_add(time_of_day)
}

/// The number written by `len` ASCII digits at `at` in `text`; `None` for anything else.
fn digits(text: &str, at: usize, len: usize) -> Option<u32> {
    let field = text.get(at..at.checked_add(len)?)?;
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    field.parse().ok()
}

/// Parses an HTTP date in the IMF-fixdate form every current server sends
/// (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 §5.6.7), surrounding whitespace ignored.
///
/// The obsolete RFC 850 and asctime forms give `None`, as does any other text: a `Date` nobody
/// can read changes nothing where it is used.
pub fn parse_http_date(value: &str) -> Option<SystemTime> {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    // `Sun, 06 Nov 1994 08:49:37 GMT`
    //  0    5  8   12   17 20 23 26
    let v = value.trim();
    if v.len() != 29 || !v.is_ascii() {
        return None;
    }
    let b = v.as_bytes();
    let punctuation = [(3, b','), (4, b' '), (7, b' '), (11, b' '), (16, b' ')];
    if punctuation.iter().any(|&(at, want)| b[at] != want)
        || (b[19], b[22]) != (b':', b':')
        || &v[25..] != " GMT"
        || !DAYS.contains(&&v[..3])
    {
        return None;
    }
    let month = MONTHS.iter().position(|m| *m == &v[8..11])?;
    let secs = civil_secs(
        i64::from(digits(v, 12, 4)?),
        u32::try_from(month + 1).ok()?,
        digits(v, 5, 2)?,
        digits(v, 17, 2)?,
        digits(v, 20, 2)?,
        digits(v, 23, 2)?,
    )?;
    from_unix_secs(secs)
}

/// Parses an RFC 3339 time such as `2026-01-02T03:04:05Z` or
/// `2026-01-02T03:04:05.123456789+01:00` (`t` or a space for `T` and `z` for `Z` accepted, as
/// RFC 3339 allows). A fraction of a second is dropped.
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    // `2026-01-02T03:04:05`, then an optional fraction, then `Z` or `±hh:mm`.
    let b = text.as_bytes();
    if b.len() < 20
        || (b[4], b[7], b[13], b[16]) != (b'-', b'-', b':', b':')
        || !matches!(b[10], b'T' | b't' | b' ')
    {
        return None;
    }
    let local = civil_secs(
        i64::from(digits(text, 0, 4)?),
        digits(text, 5, 2)?,
        digits(text, 8, 2)?,
        digits(text, 11, 2)?,
        digits(text, 14, 2)?,
        digits(text, 17, 2)?,
    )?;
    // Every byte before 19 is an ASCII digit or separator by now, so 19 is a char boundary.
    let mut rest = text.get(19..)?;
    if let Some(fraction) = rest.strip_prefix('.') {
        let len = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if len == 0 {
            return None;
        }
        rest = fraction.get(len..)?;
    }
    let offset = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (hours, minutes) = (digits(rest, 1, 2)?, digits(rest, 4, 2)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            let secs = i64::from(hours) * 3600 + i64::from(minutes) * 60;
            if *sign == b'-' { -secs } else { secs }
        }
        _ => return None,
    };
    from_unix_secs(local.checked_sub(offset)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Option<SystemTime> {
        from_unix_secs(secs)
    }

    #[test]
    fn days_from_civil_exact_vectors() {
        for (date, days) in [
            ((1970, 1, 1), 0),
            ((1969, 12, 31), -1),
            ((2000, 2, 29), 11_016),
            ((2000, 3, 1), 11_017),
            ((1600, 3, 1), -135_080),
            ((1, 1, 1), -719_162),
            ((0, 3, 1), -719_468),
            ((9999, 12, 31), 2_932_896),
        ] {
            assert_eq!(
                days_from_civil(date.0, date.1, date.2),
                Some(days),
                "{date:?}"
            );
        }
        // Dates that do not exist.
        for (y, m, d) in [
            (2023, 2, 29),
            (1900, 2, 29),
            (2100, 2, 29),
            (2024, 4, 31),
            (2024, 0, 1),
            (2024, 13, 1),
            (2024, 1, 0),
            (2024, 1, 32),
        ] {
            assert_eq!(days_from_civil(y, m, d), None, "{y}-{m}-{d}");
        }
        assert!(is_leap_year(2000) && is_leap_year(2024) && is_leap_year(-4));
        assert!(!is_leap_year(1900) && !is_leap_year(2023) && !is_leap_year(2100));
        // Huge or negative years: a value or None, never a panic.
        assert_eq!(days_from_civil(i64::MAX, 12, 31), None);
        assert_eq!(days_from_civil(i64::MIN, 1, 1), None);
        assert_eq!(days_from_civil(i64::MIN, 3, 1), None);
        // Year -1's March-to-February year ends with year 0's leap day.
        assert_eq!(days_from_civil(-1, 3, 1), Some(-719_468 - 366));
        assert_eq!(civil_secs(i64::MAX / 1000, 1, 1, 0, 0, 0), None);
    }

    #[test]
    fn unix_seconds_round_trip() {
        for secs in [
            0,
            1,
            -1,
            784_111_777,
            2_147_483_647,
            2_147_483_648,
            4_294_967_296,
            -62_135_596_800,
        ] {
            let t = from_unix_secs(secs).unwrap();
            assert_eq!(unix_secs(t), secs);
        }
        assert_eq!(from_unix_secs(0), Some(SystemTime::UNIX_EPOCH));
        // Not representable on any platform's SystemTime: None, not a panic.
        let _ = from_unix_secs(i64::MAX);
        let _ = from_unix_secs(i64::MIN);
    }

    /// RFC 7231 §7.1.1.1's example, leap days, the epoch, past 2038 and 2106, the last
    /// four-digit year.
    #[test]
    fn http_dates_exact_vectors() {
        for (text, secs) in [
            ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777),
            ("Tue, 29 Feb 2000 00:00:00 GMT", 951_782_400),
            ("Thu, 29 Feb 2024 00:00:00 GMT", 1_709_164_800),
            ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
            ("Wed, 31 Dec 1969 23:59:59 GMT", -1),
            ("Tue, 19 Jan 2038 03:14:08 GMT", 2_147_483_648),
            ("Sun, 07 Feb 2106 06:28:16 GMT", 4_294_967_296),
            ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799),
            ("  Sun, 06 Nov 1994 08:49:37 GMT\r\n", 784_111_777),
            // A leap second is the next minute's first.
            ("Sat, 31 Dec 2016 23:59:60 GMT", 1_483_228_800),
        ] {
            assert_eq!(parse_http_date(text), at(secs), "{text}");
        }
    }

    #[test]
    fn http_date_garbage_is_none() {
        for bad in [
            "",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 06 Nov 1994 08:60:37 GMT",
            "Sun, 06 Nov 1994 08:49:61 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 29 Feb 2023 00:00:00 GMT",
            "Sun, 31 Apr 2023 00:00:00 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT",
            "Xyz, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Sun, +6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov -994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMTX",
            "Sun, 06 Nov 19944 08:49:37 GMT",
            "Sün, 06 Nov 1994 08:49:37 GMT",
            "Sun,\u{a0}06 Nov 1994 08:49:3 GMT",
            "120",
            "yesterday",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn rfc3339_exact_vectors() {
        for (text, secs) in [
            ("1970-01-01T00:00:00Z", 0),
            ("1969-12-31T23:59:59Z", -1),
            ("2026-01-02T03:04:05Z", 1_767_323_045),
            ("2026-01-02T03:04:05.999999999Z", 1_767_323_045),
            ("2026-01-02T04:04:05+01:00", 1_767_323_045),
            ("2026-01-01T22:34:05-04:30", 1_767_323_045),
            ("2026-01-02t03:04:05z", 1_767_323_045),
            ("2026-01-02 03:04:05Z", 1_767_323_045),
            ("2024-02-29T00:00:00Z", 1_709_164_800),
            ("2038-01-19T03:14:08Z", 2_147_483_648),
            ("9999-12-31T23:59:59Z", 253_402_300_799),
            ("0000-01-01T00:00:00Z", -62_167_219_200),
        ] {
            assert_eq!(parse_rfc3339(text), at(secs), "{text}");
        }
    }

    #[test]
    fn rfc3339_garbage_is_none() {
        for bad in [
            "",
            "2026-01-02",
            "2026-13-02T03:04:05Z",
            "2026-02-29T03:04:05Z",
            "2026-01-02T24:04:05Z",
            "2026-01-02T03:04:05",
            "2026-01-02T03:04:05.Z",
            "2026-01-02T03:04:05+0100",
            "2026-01-02T03:04:05+24:00",
            "2026-01-02T03:04:05+01:60",
            "2026-01-02T03:04:05++1:00",
            "2026-01-02T03:04:05Zjunk",
            "20x6-01-02T03:04:05Z",
            "+026-01-02T03:04:05Z",
            "2026-01-02X03:04:05Z",
            "2026-01-02T03:04:05.ü",
            "ü026-01-02T03:04:05Z",
            "2026-01-02T03:04:0ü",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad:?}");
        }
    }
}
