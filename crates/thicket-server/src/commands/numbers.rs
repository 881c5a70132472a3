//! Numbers as Redis reads and writes them in string values.

use crate::resp::Reply;

pub fn not_an_integer() -> Reply {
    Reply::error("ERR value is not an integer or out of range")
}

pub fn not_a_float() -> Reply {
    Reply::error("ERR value is not a valid float")
}

/// Redis's `string2ll`: an optional `-`, then digits without leading zeros
/// (a lone `0` aside), nothing else, within `i64`.
pub fn parse_i64(bytes: &[u8]) -> Option<i64> {
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    let well_formed = match digits {
        [] => false,
        [b'0'] => bytes.len() == 1,
        [first, rest @ ..] => (b'1'..=b'9').contains(first) && rest.iter().all(u8::is_ascii_digit),
    };
    if !well_formed {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

pub fn int_arg(bytes: &[u8]) -> Result<i64, Reply> {
    parse_i64(bytes).ok_or_else(not_an_integer)
}

/// Redis's `string2ld`: no leading space, the whole string, not NaN.
pub fn parse_f64(bytes: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    (!value.is_nan()).then_some(value)
}

/// A float as INCRBYFLOAT replies it: plain decimal, no exponent, no
/// trailing zeros (Redis prints a `long double` with `%.17Lf` and trims;
/// an `f64` keeps fewer digits, see docs/server.md).
pub fn format_f64(value: f64) -> String {
    let text = format!("{value}");
    if text == "-0" {
        "0".to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        for bad in [
            &b""[..],
            b"-",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"-0",
            b"9223372036854775808",
            b"1.0",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn floats_follow_string2ld() {
        assert_eq!(parse_f64(b"1e3"), Some(1000.0));
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(format_f64(10.5), "10.5");
        assert_eq!(format_f64(3000.0), "3000");
        assert_eq!(format_f64(-0.0), "0");
    }
}

/// C's `%.17g`, as Redis 7.0 replies scores (`inf` and `-inf` for the
/// infinities).
pub fn format_g17(value: f64) -> String {
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let scientific = format!("{value:.16e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..17).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exponent.abs())
    } else {
        let decimals = (16 - exponent).max(0) as usize;
        trim(&format!("{value:.decimals$}"))
    }
}

#[cfg(test)]
mod g17_tests {
    use super::format_g17;

    #[test]
    fn matches_printf() {
        assert_eq!(format_g17(1.0), "1");
        assert_eq!(format_g17(1.5), "1.5");
        assert_eq!(format_g17(0.1), "0.10000000000000001");
        assert_eq!(format_g17(-2.0), "-2");
        assert_eq!(format_g17(1e20), "1e+20");
        assert_eq!(format_g17(1.5e-7), "1.4999999999999999e-07");
        assert_eq!(format_g17(123456.0), "123456");
        assert_eq!(format_g17(f64::NEG_INFINITY), "-inf");
    }
}
