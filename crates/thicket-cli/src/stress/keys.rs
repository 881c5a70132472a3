//! The stress key space: key `i` and the value a put with "value base" `b`
//! writes are both derived from the numbers, so the expected state stores
//! only one `u32` per key and any value read back can be traced to the write
//! that produced it.

/// Base of a key that is absent (never written, or deleted).
pub const ABSENT: u32 = 0;
/// Largest base a put may use; `u32::MAX` marks "no write in flight".
pub const MAX_BASE: u32 = u32::MAX - 1;

/// Key `i`: `k` + eight decimal digits, every fifth key with a suffix of up
/// to 39 bytes, so keys differ in length but sort in index order.
pub fn key(i: u32) -> Vec<u8> {
    let mut k = format!("k{i:08}").into_bytes();
    if i.is_multiple_of(5) {
        k.push(b'-');
        k.extend(std::iter::repeat_n(b'x', (i % 40) as usize));
    }
    k
}

/// The index of a stress key, or `None` for anything else.
pub fn parse_key(k: &[u8]) -> Option<u32> {
    let digits = std::str::from_utf8(k.get(1..9)?).ok()?;
    let i = digits.parse().ok()?;
    (k == key(i).as_slice()).then_some(i)
}

fn mix(i: u32, base: u32) -> u64 {
    let mut z = (u64::from(i) << 32 | u64::from(base)).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The value a put of `base` to key `i` writes: 16 hex digits naming key and
/// base, then filler. Mostly short, one in ten up to 4 KiB, one in a hundred
/// up to 70 KB (longer than a log block).
pub fn value(i: u32, base: u32) -> Vec<u8> {
    let m = mix(i, base);
    let extra = match m % 100 {
        0 => (m >> 8) % 70_000,
        1..=10 => (m >> 8) % 4096,
        _ => (m >> 8) % 150,
    } as usize;
    let mut v = format!("{i:08x}{base:08x}").into_bytes();
    v.extend((0..extra).map(|j| b'a' + ((m >> (j % 57)) as u8 ^ j as u8) % 26));
    v
}

/// The base of a value read back for key `i`, if it is exactly a value the
/// stress test writes for that key.
pub fn parse_value(i: u32, v: &[u8]) -> Option<u32> {
    let base = u32::from_str_radix(std::str::from_utf8(v.get(8..16)?).ok()?, 16).ok()?;
    (base != ABSENT && base <= MAX_BASE && v == value(i, base).as_slice()).then_some(base)
}

/// A short printable description of bytes read back.
pub fn describe(bytes: &[u8]) -> String {
    const SHOW: usize = 48;
    let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(SHOW)]).into_owned();
    if bytes.len() > SHOW {
        format!("{shown:?}... ({} bytes)", bytes.len())
    } else {
        format!("{shown:?}")
    }
}

/// A base as shown in reports.
pub fn describe_base(base: u32) -> String {
    if base == ABSENT {
        "absent".to_string()
    } else {
        format!("value#{base:08x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_in_index_order_and_parse_back() {
        for i in 0..500 {
            assert!(key(i) < key(i + 1), "{i}");
            assert_eq!(parse_key(&key(i)), Some(i));
        }
        assert_eq!(parse_key(b"k00000005"), None, "key 5 has a suffix");
        assert_eq!(parse_key(b"zzz"), None);
    }

    #[test]
    fn values_name_their_key_and_base() {
        for (i, base) in [(0, 1), (7, 12345), (99, MAX_BASE)] {
            let v = value(i, base);
            assert_eq!(parse_value(i, &v), Some(base));
            assert_eq!(parse_value(i + 1, &v), None, "wrong key");
            let mut torn = v.clone();
            torn.pop();
            assert_eq!(parse_value(i, &torn), None);
        }
        let longest = (1..2000).map(|b| value(3, b).len()).max().unwrap();
        assert!(longest > 32 * 1024, "{longest}");
    }
}
