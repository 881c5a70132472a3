//! CRC32C checksums, masked as LevelDB does so that a CRC stored inside
//! checksummed data does not make the outer checksum degenerate.

const MASK_DELTA: u32 = 0xa282_ead8;

/// CRC32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// CRC32C of `a` followed by `b`, without concatenating them.
pub fn crc32c_two(a: &[u8], b: &[u8]) -> u32 {
    crc32c_append(crc32c(a), b)
}

/// CRC32C of the data `crc` covers followed by `data`.
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// The stored form of a CRC.
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask`].
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_value() {
        // RFC 3720 test vector: 32 bytes of zeros.
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
    }

    #[test]
    fn mask_round_trip_and_differs() {
        let c = crc32c(b"foo");
        assert_ne!(mask(c), c);
        assert_eq!(unmask(mask(c)), c);
    }

    #[test]
    fn two_part_equals_concatenation() {
        assert_eq!(crc32c_two(b"hello ", b"world"), crc32c(b"hello world"));
    }
}
