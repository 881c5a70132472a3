//! Options, profiles (named option presets) and their persisted form.
//!
//! A store remembers the profile and options it was created with in its
//! `OPTIONS` file; later opens start from those, may override tunables for
//! that open, and are refused when they ask for another profile.

use std::fmt;
use std::str::FromStr;

use crate::compaction::PolicyKind;
use crate::error::{Error, Result};
use crate::format::checksum;
use crate::log::RecoveryMode;
use crate::table::{CompressionType, TableOptions};

/// A named options preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// The engine's defaults: leveled compaction with every BoLT element.
    #[default]
    Default,
    /// Stock LevelDB behaviour: one 2 MiB table per file and one fsync per
    /// table, one victim per compaction, one compaction thread (the baseline
    /// BoLT is measured against).
    LevelDb,
    /// BoLT: compaction files of 1 MiB logical tables, group compaction of
    /// up to 64 MiB, settled compaction, the shared descriptor cache.
    Bolt,
    /// SifrDB: the tiered split forest, four runs per level of 2 MiB tables.
    Sifr,
}

impl Profile {
    pub const ALL: &'static [Profile] = &[
        Profile::Default,
        Profile::LevelDb,
        Profile::Bolt,
        Profile::Sifr,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Profile::Default => "default",
            Profile::LevelDb => "leveldb",
            Profile::Bolt => "bolt",
            Profile::Sifr => "sifr",
        }
    }

    /// The options this profile starts from. `leveldb` and `bolt` share
    /// LevelDB's level sizes, the BoLT paper's 64 MiB memtable and LevelDB's
    /// single compaction thread (BoLT is built on LevelDB), so that they
    /// differ only in BoLT's elements.
    pub fn options(self) -> Options {
        let paper = Options {
            profile: self,
            max_bytes_for_level_base: 10 << 20,
            compaction_threads: 1,
            ..Options::default()
        };
        match self {
            Profile::Default => Options::default(),
            Profile::LevelDb => Options {
                target_table_size: 2 << 20,
                compaction_file: false,
                group_compaction_bytes: 0,
                settled_compaction: false,
                segment_descriptor_cache: false,
                ..paper
            },
            Profile::Bolt => Options {
                target_table_size: 1 << 20,
                compaction_file: true,
                group_compaction_bytes: 64 << 20,
                settled_compaction: true,
                segment_descriptor_cache: true,
                ..paper
            },
            Profile::Sifr => Options {
                profile: self,
                compaction_policy: PolicyKind::Tiered,
                runs_per_level: 4,
                target_table_size: 2 << 20,
                ..Options::default()
            },
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Profile {
    type Err = Error;
    fn from_str(s: &str) -> Result<Profile> {
        Profile::ALL
            .iter()
            .copied()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Profile::ALL.iter().map(|p| p.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown profile {s:?} (known: {})",
                    names.join(", ")
                ))
            })
    }
}

/// Tunables of a store. Build from `Profile::options()` or `Default`, then
/// adjust fields or call [`Options::set`] by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The preset these options came from; persisted and checked on open.
    pub profile: Profile,
    /// Create the store when the directory holds none.
    pub create_if_missing: bool,
    /// Refuse to open a store that already exists.
    pub error_if_exists: bool,
    /// Bytes a memtable may hold before it is switched and flushed.
    pub write_buffer_size: u64,
    /// Immutable memtables waiting for flush before writers stop.
    pub max_immutable_memtables: usize,
    /// Size at which flush and compaction cut output tables.
    pub target_table_size: u64,
    /// Uncompressed size of a data block.
    pub block_size: usize,
    /// Keys between restart points in a block.
    pub block_restart_interval: usize,
    /// Bloom filter bits per key; 0 disables filters.
    pub bloom_bits_per_key: u32,
    /// Block compression for new tables.
    pub compression: CompressionType,
    /// Bytes of the shared block cache.
    pub block_cache_size: u64,
    /// Open segment files kept in the descriptor cache.
    pub max_open_files: usize,
    /// L0 runs that trigger an L0 compaction.
    pub l0_compaction_trigger: usize,
    /// L0 runs from which each write is delayed.
    pub l0_slowdown_writes_trigger: usize,
    /// L0 runs at which writes wait for compaction.
    pub l0_stop_writes_trigger: usize,
    /// Pending compaction bytes from which each write is delayed.
    pub soft_pending_compaction_bytes: u64,
    /// Pending compaction bytes at which writes wait for compaction.
    pub hard_pending_compaction_bytes: u64,
    /// How log corruption found during recovery is handled.
    pub wal_recovery_mode: RecoveryMode,
    /// Write logs through a shared memory map: an append survives a process
    /// crash without a `write(2)` per write group (false: one `write(2)` per
    /// group, as LevelDB and RocksDB do).
    pub log_mmap: bool,
    /// The shape of the tree: `leveled` or `tiered`.
    pub compaction_policy: PolicyKind,
    /// Tiered: runs a level holds before they are merged into the next.
    pub runs_per_level: usize,
    /// Background threads running compactions (flushes have their own).
    /// Tasks on disjoint key ranges and levels run concurrently.
    pub compaction_threads: usize,
    /// Tiered: a merge expected to write at least this many tables
    /// checkpoints every this many tables, releasing consumed inputs early
    /// (SifrDB's early cleaning with a compaction journal); 0 disables it.
    pub early_cleaning_threshold: usize,
    /// Byte target of L1; deeper levels grow by `level_size_multiplier`.
    pub max_bytes_for_level_base: u64,
    /// Growth factor between level targets.
    pub level_size_multiplier: u64,
    /// BoLT compaction file: all tables of a flush or compaction in one
    /// segment with one fsync (false: one segment and fsync per table).
    pub compaction_file: bool,
    /// BoLT group compaction: victims per task up to this many bytes (0:
    /// one victim table, as LevelDB).
    pub group_compaction_bytes: u64,
    /// BoLT settled compaction: victims with the least overlap, and those
    /// without overlap promoted by metadata only.
    pub settled_compaction: bool,
    /// BoLT descriptor cache: tables of a segment share one open file
    /// (false: every table opens its own descriptor, as LevelDB's TableCache).
    pub segment_descriptor_cache: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            profile: Profile::Default,
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            max_immutable_memtables: 2,
            target_table_size: 2 << 20,
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: CompressionType::None,
            block_cache_size: 64 << 20,
            max_open_files: 1000,
            l0_compaction_trigger: 4,
            l0_slowdown_writes_trigger: 8,
            l0_stop_writes_trigger: 12,
            soft_pending_compaction_bytes: 64 << 30,
            hard_pending_compaction_bytes: 256 << 30,
            wal_recovery_mode: RecoveryMode::TolerateTailCorruption,
            log_mmap: true,
            compaction_policy: PolicyKind::Leveled,
            runs_per_level: 4,
            compaction_threads: 1,
            early_cleaning_threshold: 10,
            max_bytes_for_level_base: 256 << 20,
            level_size_multiplier: 10,
            compaction_file: true,
            group_compaction_bytes: 64 << 20,
            settled_compaction: true,
            segment_descriptor_cache: true,
        }
    }
}

fn parse<T: FromStr>(name: &str, value: &str) -> Result<T> {
    value
        .parse()
        .map_err(|_| Error::InvalidArgument(format!("bad value {value:?} for option {name}")))
}

fn parse_bool(name: &str, value: &str) -> Result<bool> {
    match value {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(Error::InvalidArgument(format!(
            "bad value {value:?} for option {name} (expected true or false)"
        ))),
    }
}

impl Options {
    /// Names accepted by [`Options::set`], in the order they are persisted.
    pub const NAMES: &'static [&'static str] = &[
        "write_buffer_size",
        "max_immutable_memtables",
        "target_table_size",
        "block_size",
        "block_restart_interval",
        "bloom_bits_per_key",
        "compression",
        "block_cache_size",
        "max_open_files",
        "l0_compaction_trigger",
        "l0_slowdown_writes_trigger",
        "l0_stop_writes_trigger",
        "soft_pending_compaction_bytes",
        "hard_pending_compaction_bytes",
        "wal_recovery_mode",
        "log_mmap",
        "compaction_policy",
        "runs_per_level",
        "compaction_threads",
        "early_cleaning_threshold",
        "max_bytes_for_level_base",
        "level_size_multiplier",
        "compaction_file",
        "group_compaction_bytes",
        "settled_compaction",
        "segment_descriptor_cache",
    ];

    /// Sets one option from its textual form (`--option NAME=VALUE`).
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        match name {
            "write_buffer_size" => self.write_buffer_size = parse(name, value)?,
            "max_immutable_memtables" => self.max_immutable_memtables = parse(name, value)?,
            "target_table_size" => self.target_table_size = parse(name, value)?,
            "block_size" => self.block_size = parse(name, value)?,
            "block_restart_interval" => self.block_restart_interval = parse(name, value)?,
            "bloom_bits_per_key" => self.bloom_bits_per_key = parse(name, value)?,
            "compression" => self.compression = parse(name, value)?,
            "block_cache_size" => self.block_cache_size = parse(name, value)?,
            "max_open_files" => self.max_open_files = parse(name, value)?,
            "l0_compaction_trigger" => self.l0_compaction_trigger = parse(name, value)?,
            "l0_slowdown_writes_trigger" => self.l0_slowdown_writes_trigger = parse(name, value)?,
            "l0_stop_writes_trigger" => self.l0_stop_writes_trigger = parse(name, value)?,
            "soft_pending_compaction_bytes" => {
                self.soft_pending_compaction_bytes = parse(name, value)?
            }
            "hard_pending_compaction_bytes" => {
                self.hard_pending_compaction_bytes = parse(name, value)?
            }
            "wal_recovery_mode" => self.wal_recovery_mode = parse(name, value)?,
            "log_mmap" => self.log_mmap = parse_bool(name, value)?,
            "compaction_policy" => self.compaction_policy = parse(name, value)?,
            "runs_per_level" => self.runs_per_level = parse(name, value)?,
            "compaction_threads" => self.compaction_threads = parse(name, value)?,
            "early_cleaning_threshold" => self.early_cleaning_threshold = parse(name, value)?,
            "max_bytes_for_level_base" => self.max_bytes_for_level_base = parse(name, value)?,
            "level_size_multiplier" => self.level_size_multiplier = parse(name, value)?,
            "compaction_file" => self.compaction_file = parse_bool(name, value)?,
            "group_compaction_bytes" => self.group_compaction_bytes = parse(name, value)?,
            "settled_compaction" => self.settled_compaction = parse_bool(name, value)?,
            "segment_descriptor_cache" => self.segment_descriptor_cache = parse_bool(name, value)?,
            "create_if_missing" => self.create_if_missing = parse_bool(name, value)?,
            "error_if_exists" => self.error_if_exists = parse_bool(name, value)?,
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "unknown option {name:?} (known: {})",
                    Options::NAMES.join(", ")
                )))
            }
        }
        Ok(())
    }

    /// The textual value of a persisted option.
    pub fn get(&self, name: &str) -> Option<String> {
        Some(match name {
            "write_buffer_size" => self.write_buffer_size.to_string(),
            "max_immutable_memtables" => self.max_immutable_memtables.to_string(),
            "target_table_size" => self.target_table_size.to_string(),
            "block_size" => self.block_size.to_string(),
            "block_restart_interval" => self.block_restart_interval.to_string(),
            "bloom_bits_per_key" => self.bloom_bits_per_key.to_string(),
            "compression" => self.compression.to_string(),
            "block_cache_size" => self.block_cache_size.to_string(),
            "max_open_files" => self.max_open_files.to_string(),
            "l0_compaction_trigger" => self.l0_compaction_trigger.to_string(),
            "l0_slowdown_writes_trigger" => self.l0_slowdown_writes_trigger.to_string(),
            "l0_stop_writes_trigger" => self.l0_stop_writes_trigger.to_string(),
            "soft_pending_compaction_bytes" => self.soft_pending_compaction_bytes.to_string(),
            "hard_pending_compaction_bytes" => self.hard_pending_compaction_bytes.to_string(),
            "wal_recovery_mode" => self.wal_recovery_mode.to_string(),
            "log_mmap" => self.log_mmap.to_string(),
            "compaction_policy" => self.compaction_policy.to_string(),
            "runs_per_level" => self.runs_per_level.to_string(),
            "compaction_threads" => self.compaction_threads.to_string(),
            "early_cleaning_threshold" => self.early_cleaning_threshold.to_string(),
            "max_bytes_for_level_base" => self.max_bytes_for_level_base.to_string(),
            "level_size_multiplier" => self.level_size_multiplier.to_string(),
            "compaction_file" => self.compaction_file.to_string(),
            "group_compaction_bytes" => self.group_compaction_bytes.to_string(),
            "settled_compaction" => self.settled_compaction.to_string(),
            "segment_descriptor_cache" => self.segment_descriptor_cache.to_string(),
            _ => return None,
        })
    }

    /// Rejects combinations the engine cannot run with.
    pub fn validate(&self) -> Result<()> {
        let bad = |msg: &str| Err(Error::InvalidArgument(msg.to_string()));
        if self.write_buffer_size < 64 << 10 {
            return bad("write_buffer_size must be at least 65536");
        }
        if self.max_immutable_memtables == 0 {
            return bad("max_immutable_memtables must be at least 1");
        }
        if self.target_table_size < 4096 {
            return bad("target_table_size must be at least 4096");
        }
        if self.block_size < 256 || self.block_size > 16 << 20 {
            return bad("block_size must be between 256 and 16 MiB");
        }
        if self.block_restart_interval == 0 {
            return bad("block_restart_interval must be at least 1");
        }
        if self.bloom_bits_per_key > 64 {
            return bad("bloom_bits_per_key must be at most 64");
        }
        if self.max_bytes_for_level_base < 64 << 10 {
            return bad("max_bytes_for_level_base must be at least 65536");
        }
        if self.soft_pending_compaction_bytes > self.hard_pending_compaction_bytes {
            return bad(
                "soft_pending_compaction_bytes must not exceed hard_pending_compaction_bytes",
            );
        }
        if self.runs_per_level < 2 {
            return bad("runs_per_level must be at least 2");
        }
        if self.compaction_threads == 0 || self.compaction_threads > MAX_COMPACTION_THREADS {
            return Err(Error::InvalidArgument(format!(
                "compaction_threads must be between 1 and {MAX_COMPACTION_THREADS}"
            )));
        }
        if self.level_size_multiplier < 2 {
            return bad("level_size_multiplier must be at least 2");
        }
        if self.max_open_files < 16 {
            return bad("max_open_files must be at least 16");
        }
        if self.l0_compaction_trigger < 1
            || self.l0_slowdown_writes_trigger < self.l0_compaction_trigger
            || self.l0_stop_writes_trigger < self.l0_slowdown_writes_trigger
        {
            return bad("need 1 <= l0_compaction_trigger <= l0_slowdown_writes_trigger <= l0_stop_writes_trigger");
        }
        Ok(())
    }

    /// The table-format part of the options.
    pub fn table_options(&self) -> TableOptions {
        TableOptions {
            block_size: self.block_size,
            restart_interval: self.block_restart_interval,
            bloom_bits_per_key: self.bloom_bits_per_key,
            compression: self.compression,
        }
    }

    /// The persisted form: a versioned text file with a checksum line (see
    /// `docs/format.md`).
    pub fn encode(&self) -> String {
        let mut body = format!("{OPTIONS_HEADER}\nprofile={}\n", self.profile);
        for name in Options::NAMES {
            if let Some(v) = self.get(name) {
                body.push_str(&format!("{name}={v}\n"));
            }
        }
        let crc = checksum::crc32c(body.as_bytes());
        body.push_str(&format!("crc32c={crc:08x}\n"));
        body
    }

    /// Parses a persisted `OPTIONS` file; `file` names it in errors.
    pub fn decode(file: &str, text: &[u8]) -> Result<Options> {
        let corrupt = |offset: usize, why: &str| Error::corruption(file, offset as u64, why);
        let text = std::str::from_utf8(text).map_err(|e| corrupt(e.valid_up_to(), "not UTF-8"))?;
        let crc_at = text
            .rfind("crc32c=")
            .ok_or_else(|| corrupt(text.len(), "missing checksum line"))?;
        let (body, crc_line) = text.split_at(crc_at);
        let stored = u32::from_str_radix(crc_line.trim_end().trim_start_matches("crc32c="), 16)
            .map_err(|_| corrupt(crc_at, "bad checksum line"))?;
        if stored != checksum::crc32c(body.as_bytes()) {
            return Err(corrupt(crc_at, "options checksum mismatch"));
        }
        let mut lines = body.lines();
        if lines.next() != Some(OPTIONS_HEADER) {
            return Err(corrupt(0, "unknown OPTIONS header or version"));
        }
        let pairs = lines
            .map(|line| {
                line.split_once('=')
                    .ok_or_else(|| corrupt(0, "malformed line"))
            })
            .collect::<Result<Vec<(&str, &str)>>>()?;
        // An option the file predates keeps its profile's value.
        let mut options = match pairs.iter().find(|(name, _)| *name == "profile") {
            Some((_, value)) => value
                .parse::<Profile>()
                .map_err(|_| corrupt(0, "unknown profile"))?
                .options(),
            None => Options::default(),
        };
        for (name, value) in pairs.into_iter().filter(|(name, _)| *name != "profile") {
            options
                .set(name, value)
                .map_err(|e| corrupt(0, &format!("bad option line {name}={value}: {e}")))?;
        }
        Ok(options)
    }
}

const OPTIONS_HEADER: &str = "thicketdb-options 1";

/// More compaction threads than this only contend: a task needs a level
/// (and key range) no other task touches, and a tree has few levels.
pub const MAX_COMPACTION_THREADS: usize = 64;

/// Per-write settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// `fdatasync` the log before acknowledging: the write survives power
    /// loss. Without it a write survives a process crash only.
    pub sync: bool,
}

/// Per-read settings.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Read as of this snapshot instead of the latest state.
    pub snapshot: Option<crate::db::Snapshot>,
    /// Inclusive lower bound of iteration.
    pub lower_bound: Option<Vec<u8>>,
    /// Exclusive upper bound of iteration.
    pub upper_bound: Option<Vec<u8>>,
    /// Keep the blocks this read loads from files in the block cache
    /// (default true). Turn it off for one-off scans, so that they do not
    /// evict the blocks other reads use; cached blocks are used either way.
    pub fill_cache: bool,
}

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions {
            snapshot: None,
            lower_bound: None,
            upper_bound: None,
            fill_cache: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let mut o = Options::default();
        o.set("write_buffer_size", "4194304").unwrap();
        o.set("compression", "lz4").unwrap();
        let text = o.encode();
        assert_eq!(Options::decode("OPTIONS", text.as_bytes()).unwrap(), o);
    }

    #[test]
    fn tampering_is_detected() {
        let text = Options::default().encode().replace("=4096", "=8192");
        let err = Options::decode("OPTIONS", text.as_bytes()).unwrap_err();
        assert!(err.is_corruption(), "{err}");
    }

    #[test]
    fn unknown_and_bad_options_are_clear_errors() {
        let mut o = Options::default();
        let e = o.set("no_such_thing", "1").unwrap_err();
        assert!(e.to_string().contains("unknown option"));
        let e = o.set("write_buffer_size", "lots").unwrap_err();
        assert!(e.to_string().contains("bad value"));
        o.set("write_buffer_size", "10").unwrap();
        assert!(o.validate().is_err());
        assert!("nope".parse::<Profile>().is_err());
        assert_eq!("default".parse::<Profile>().unwrap(), Profile::Default);
    }

    #[test]
    fn an_options_file_without_compaction_threads_gets_the_profile_value() {
        for (profile, threads) in [(Profile::Default, 1), (Profile::LevelDb, 1)] {
            let body: String = profile
                .options()
                .encode()
                .lines()
                .filter(|l| !l.starts_with("compaction_threads=") && !l.starts_with("crc32c="))
                .map(|l| format!("{l}\n"))
                .collect();
            let older = format!("{body}crc32c={:08x}\n", checksum::crc32c(body.as_bytes()));
            let decoded = Options::decode("OPTIONS", older.as_bytes()).unwrap();
            assert_eq!(decoded.compaction_threads, threads, "{profile}");
            assert_eq!(decoded, profile.options());
        }
    }

    #[test]
    fn compaction_threads_are_bounded() {
        let mut o = Options::default();
        for (value, ok) in [("0", false), ("1", true), ("64", true), ("65", false)] {
            o.set("compaction_threads", value).unwrap();
            assert_eq!(o.validate().is_ok(), ok, "compaction_threads={value}");
        }
        assert!(o.set("compaction_threads", "-1").is_err());
    }

    #[test]
    fn profiles_round_trip_and_differ_only_in_bolt_elements() {
        for &p in Profile::ALL {
            let o = p.options();
            assert_eq!(o.profile, p);
            o.validate().unwrap();
            assert_eq!(p.name().parse::<Profile>().unwrap(), p);
            assert_eq!(
                Options::decode("OPTIONS", o.encode().as_bytes()).unwrap(),
                o
            );
        }
        let (l, b) = (Profile::LevelDb.options(), Profile::Bolt.options());
        assert_eq!(l.write_buffer_size, b.write_buffer_size);
        assert_eq!(l.max_bytes_for_level_base, b.max_bytes_for_level_base);
        assert!(!l.compaction_file && b.compaction_file);
        assert!(l.group_compaction_bytes == 0 && b.group_compaction_bytes > 0);
        assert!(!l.settled_compaction && b.settled_compaction);
        assert!(!l.segment_descriptor_cache && b.segment_descriptor_cache);
        assert_eq!((l.compaction_threads, b.compaction_threads), (1, 1));
    }
}
