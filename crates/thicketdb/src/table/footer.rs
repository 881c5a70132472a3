//! The fixed-size footer that ends every table and locates its metadata.

use super::block_handle::BlockHandle;
use crate::format::checksum;
use crate::format::coding::{decode_fixed32, decode_fixed64, put_fixed32, put_fixed64};

/// Bytes in a footer.
pub const FOOTER_LEN: usize = 64;
/// Identifies a table footer ("THKTTBL\x01" read as a little-endian u64).
pub const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"THKTTBL\x01");
/// The table format of a table with the built-in Bloom filter or none.
pub const FORMAT_VERSION: u32 = 1;
/// The table format of a table whose filter a named filter policy built
/// (the name is in its properties). Readers that predate it refuse such a
/// table instead of taking its filter for a Bloom filter.
pub const NAMED_FILTER_FORMAT_VERSION: u32 = 2;
/// The table format of a table with a range-deletion block (its handle is
/// in the properties; the filter may be named or built in, as the
/// properties say). Older readers refuse it rather than miss its
/// tombstones.
pub const RANGE_DEL_FORMAT_VERSION: u32 = 3;
/// The table format of a log table (TRIAD-LOG, with or without a
/// range-deletion block): a value is the encoded
/// address of the value in a log the properties list. Readers that predate
/// it refuse such a table instead of returning addresses as values.
pub const LOG_TABLE_FORMAT_VERSION: u32 = 4;

const VERSION_POS: usize = 48;
const MAGIC_POS: usize = 52;
const CRC_POS: usize = 60;

/// Handles of a table's metadata blocks. A filter handle of size 0 means the
/// table has no filter (a real filter is never empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footer {
    pub filter: BlockHandle,
    pub properties: BlockHandle,
    pub index: BlockHandle,
    /// [`FORMAT_VERSION`], [`NAMED_FILTER_FORMAT_VERSION`] or
    /// [`RANGE_DEL_FORMAT_VERSION`] or [`LOG_TABLE_FORMAT_VERSION`].
    pub version: u32,
}

impl Footer {
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut buf = Vec::with_capacity(FOOTER_LEN);
        for h in [self.filter, self.properties, self.index] {
            put_fixed64(&mut buf, h.offset);
            put_fixed64(&mut buf, h.size);
        }
        put_fixed32(&mut buf, self.version);
        put_fixed64(&mut buf, TABLE_MAGIC);
        let crc = checksum::mask(checksum::crc32c(&buf));
        put_fixed32(&mut buf, crc);
        let mut out = [0u8; FOOTER_LEN];
        out.copy_from_slice(&buf);
        out
    }

    /// Decodes and verifies a footer; `Err` carries the corruption reason.
    pub fn decode(src: &[u8]) -> Result<Footer, &'static str> {
        if src.len() != FOOTER_LEN {
            return Err("table footer has the wrong length");
        }
        // Magic first: a wrong magic means "not a table here" (bad offset or
        // length), which is a more useful report than a checksum mismatch.
        if decode_fixed64(src, MAGIC_POS) != Some(TABLE_MAGIC) {
            return Err("bad table magic number");
        }
        let stored = decode_fixed32(src, CRC_POS).ok_or("table footer truncated")?;
        if checksum::unmask(stored) != checksum::crc32c(&src[..CRC_POS]) {
            return Err("table footer checksum mismatch");
        }
        let version = match decode_fixed32(src, VERSION_POS) {
            Some(
                v @ (FORMAT_VERSION
                | NAMED_FILTER_FORMAT_VERSION
                | RANGE_DEL_FORMAT_VERSION
                | LOG_TABLE_FORMAT_VERSION),
            ) => v,
            _ => return Err("unsupported table format version"),
        };
        let handle = |i: usize| -> Result<BlockHandle, &'static str> {
            let offset = decode_fixed64(src, i * 16).ok_or("table footer truncated")?;
            let size = decode_fixed64(src, i * 16 + 8).ok_or("table footer truncated")?;
            Ok(BlockHandle::new(offset, size))
        };
        Ok(Footer {
            filter: handle(0)?,
            properties: handle(1)?,
            index: handle(2)?,
            version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Footer {
        Footer {
            filter: BlockHandle::new(1000, 120),
            properties: BlockHandle::new(1125, 4200),
            index: BlockHandle::new(5330, 77),
            version: FORMAT_VERSION,
        }
    }

    #[test]
    fn round_trip() {
        assert_eq!(Footer::decode(&sample().encode()), Ok(sample()));
    }

    #[test]
    fn named_filter_version_round_trips_and_later_versions_are_refused() {
        let named = Footer {
            version: NAMED_FILTER_FORMAT_VERSION,
            ..sample()
        };
        assert_eq!(Footer::decode(&named.encode()), Ok(named));
        let range_dels = Footer {
            version: RANGE_DEL_FORMAT_VERSION,
            ..sample()
        };
        assert_eq!(Footer::decode(&range_dels.encode()), Ok(range_dels));
        let later = Footer {
            version: LOG_TABLE_FORMAT_VERSION + 1,
            ..sample()
        };
        assert_eq!(
            Footer::decode(&later.encode()),
            Err("unsupported table format version")
        );
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let good = sample().encode();
        for i in 0..FOOTER_LEN {
            let mut bad = good;
            bad[i] ^= 0x10;
            assert!(Footer::decode(&bad).is_err(), "byte {i}");
        }
    }

    #[test]
    fn wrong_length_is_rejected() {
        let good = sample().encode();
        assert!(Footer::decode(&good[1..]).is_err());
        assert!(Footer::decode(&[]).is_err());
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = Footer::decode(&bytes);
        }

        #[test]
        fn garbage_with_magic_is_rejected(mut bytes in proptest::collection::vec(any::<u8>(), FOOTER_LEN)) {
            bytes[MAGIC_POS..CRC_POS].copy_from_slice(&TABLE_MAGIC.to_le_bytes());
            prop_assert!(Footer::decode(&bytes).is_err());
        }
    }
}
