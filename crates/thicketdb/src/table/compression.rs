//! Block compression.
//!
//! A compressed block is `u32 LE raw length ++ codec output` for both codecs
//! (for LZ4 this is exactly lz4_flex's "size prepended" format). Storing the
//! raw length lets the reader refuse absurd sizes before allocating.

use std::fmt;
use std::str::FromStr;

use crate::format::coding::{decode_fixed32, put_fixed32};

/// Largest block the reader will decompress; a larger length prefix can only
/// come from a damaged or hostile file.
pub const MAX_BLOCK_SIZE: usize = 64 << 20;

const ZSTD_LEVEL: i32 = zstd::DEFAULT_COMPRESSION_LEVEL;

/// How a block's bytes are stored; the value is the trailer's type byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum CompressionType {
    /// Stored as is.
    #[default]
    None = 0,
    /// LZ4 block format (fast, modest ratio).
    Lz4 = 1,
    /// Zstandard at its default level (slower, better ratio).
    Zstd = 2,
}

impl CompressionType {
    /// The type whose trailer byte is `v`, if any.
    pub fn from_u8(v: u8) -> Option<CompressionType> {
        match v {
            0 => Some(CompressionType::None),
            1 => Some(CompressionType::Lz4),
            2 => Some(CompressionType::Zstd),
            _ => None,
        }
    }

    /// The name options and the CLI use (`none`, `lz4`, `zstd`).
    pub fn name(self) -> &'static str {
        match self {
            CompressionType::None => "none",
            CompressionType::Lz4 => "lz4",
            CompressionType::Zstd => "zstd",
        }
    }
}

impl fmt::Display for CompressionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CompressionType {
    type Err = crate::error::Error;

    fn from_str(s: &str) -> crate::error::Result<CompressionType> {
        match s {
            "none" => Ok(CompressionType::None),
            "lz4" => Ok(CompressionType::Lz4),
            "zstd" => Ok(CompressionType::Zstd),
            _ => Err(crate::error::Error::InvalidArgument(format!(
                "unknown compression {s:?} (expected none, lz4 or zstd)"
            ))),
        }
    }
}

/// Compresses `raw` into `out` (replacing its contents) and returns the
/// type to record. Returns `None` — and `out` is meaningless — when
/// compression is off, fails, or saves less than 1/8 of the bytes, since
/// then decompressing on every read would cost more than the space saved.
pub fn compress(kind: CompressionType, raw: &[u8], out: &mut Vec<u8>) -> CompressionType {
    if kind == CompressionType::None || raw.len() > MAX_BLOCK_SIZE {
        return CompressionType::None;
    }
    out.clear();
    put_fixed32(out, raw.len() as u32);
    match kind {
        CompressionType::None => return CompressionType::None,
        CompressionType::Lz4 => out.extend_from_slice(&lz4_flex::block::compress(raw)),
        CompressionType::Zstd => match zstd::bulk::compress(raw, ZSTD_LEVEL) {
            Ok(c) => out.extend_from_slice(&c),
            Err(_) => return CompressionType::None,
        },
    }
    if out.len() > raw.len() - raw.len() / 8 {
        return CompressionType::None;
    }
    kind
}

/// Inverse of [`compress`] for a compressed `kind`; `Err` carries the
/// reason for a corruption report.
pub fn decompress(kind: CompressionType, data: &[u8]) -> Result<Vec<u8>, &'static str> {
    let raw_len = decode_fixed32(data, 0).ok_or("compressed block too short")? as usize;
    if raw_len > MAX_BLOCK_SIZE {
        return Err("compressed block claims an oversized raw length");
    }
    let body = &data[4..];
    let out = match kind {
        CompressionType::None => return Err("block is not compressed"),
        CompressionType::Lz4 => {
            lz4_flex::block::decompress(body, raw_len).map_err(|_| "lz4 decompression failed")?
        }
        CompressionType::Zstd => {
            zstd::bulk::decompress(body, raw_len).map_err(|_| "zstd decompression failed")?
        }
    };
    if out.len() != raw_len {
        return Err("decompressed size does not match the recorded size");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn compressible() -> Vec<u8> {
        (0..10_000u32)
            .flat_map(|i| (i % 97).to_le_bytes())
            .collect()
    }

    #[test]
    fn names_round_trip() {
        for kind in [
            CompressionType::None,
            CompressionType::Lz4,
            CompressionType::Zstd,
        ] {
            assert_eq!(kind.to_string().parse::<CompressionType>().unwrap(), kind);
            assert_eq!(CompressionType::from_u8(kind as u8), Some(kind));
        }
        assert!("snappy".parse::<CompressionType>().is_err());
        assert_eq!(CompressionType::from_u8(3), None);
    }

    #[test]
    fn codecs_round_trip() {
        let raw = compressible();
        for kind in [CompressionType::Lz4, CompressionType::Zstd] {
            let mut out = Vec::new();
            assert_eq!(compress(kind, &raw, &mut out), kind);
            assert!(out.len() < raw.len() / 2);
            assert_eq!(decompress(kind, &out).unwrap(), raw);
        }
    }

    #[test]
    fn incompressible_is_stored_raw() {
        let raw: Vec<u8> = (0..4096u64)
            .map(|i| (xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes()) >> 7) as u8)
            .collect();
        let mut out = Vec::new();
        assert_eq!(
            compress(CompressionType::Zstd, &raw, &mut out),
            CompressionType::None
        );
        assert_eq!(
            compress(CompressionType::Lz4, &raw, &mut out),
            CompressionType::None
        );
    }

    #[test]
    fn oversized_length_prefix_is_refused() {
        let mut data = Vec::new();
        put_fixed32(&mut data, u32::MAX);
        data.extend_from_slice(&[0; 16]);
        assert!(decompress(CompressionType::Lz4, &data).is_err());
        assert!(decompress(CompressionType::Zstd, &data).is_err());
    }

    #[test]
    fn wrong_length_prefix_is_refused() {
        let raw = compressible();
        let mut out = Vec::new();
        compress(CompressionType::Zstd, &raw, &mut out);
        out[0] ^= 1;
        assert!(decompress(CompressionType::Zstd, &out).is_err());
    }

    proptest! {
        #[test]
        fn decompress_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decompress(CompressionType::Lz4, &bytes);
            let _ = decompress(CompressionType::Zstd, &bytes);
        }
    }
}
