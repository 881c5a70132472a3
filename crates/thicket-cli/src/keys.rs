//! The keys and values `thicket load` writes. Crash tests recompute them, so
//! the format is part of the CLI contract:
//!
//! - key `i` is `format!("key{:016}", i)`;
//! - its value repeats `format!("v{:016}|", i)`, cut to the requested size.

/// `i` as at least 16 zero-padded decimal digits, appended to `buf`.
/// Hand-rolled: `format!` pads one char at a time, which shows in profiles
/// of a million-key load.
fn push_padded(buf: &mut Vec<u8>, i: u64) {
    const WIDTH: usize = 16;
    if i >= 10u64.pow(WIDTH as u32) {
        buf.extend_from_slice(i.to_string().as_bytes());
        return;
    }
    let mut digits = [b'0'; WIDTH];
    let mut n = i;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
    buf.extend_from_slice(&digits);
}

/// Writes key `i` into `buf` (cleared first).
pub fn key_into(buf: &mut Vec<u8>, i: u64) {
    buf.clear();
    buf.extend_from_slice(b"key");
    push_padded(buf, i);
}

/// Writes the `size`-byte value of key `i` into `buf` (cleared first).
pub fn value_into(buf: &mut Vec<u8>, i: u64, size: usize) {
    let mut pattern = Vec::with_capacity(24);
    pattern.push(b'v');
    push_padded(&mut pattern, i);
    pattern.push(b'|');
    buf.clear();
    while buf.len() < size {
        let take = (size - buf.len()).min(pattern.len());
        buf.extend_from_slice(&pattern[..take]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_and_value_formats() {
        let mut k = Vec::new();
        for i in [
            0,
            42,
            9_999_999_999_999_999,
            10_000_000_000_000_000,
            u64::MAX,
        ] {
            key_into(&mut k, i);
            assert_eq!(k, format!("key{i:016}").into_bytes());
        }
        let mut v = Vec::new();
        value_into(&mut v, 7, 20);
        assert_eq!(v, b"v0000000000000007|v0");
        value_into(&mut v, 7, 0);
        assert!(v.is_empty());
        value_into(&mut v, 12, 100);
        assert_eq!(v, &format!("v{:016}|", 12).repeat(6).as_bytes()[..100]);
    }
}
