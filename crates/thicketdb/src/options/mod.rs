//! Options, profiles (named option presets) and their persisted form.
//!
//! A store remembers the profile and options it was created with in its
//! `OPTIONS` file; later opens start from those, may override tunables for
//! that open, and are refused when they ask for another profile. Every
//! option is declared once, in the `options!` list below: the struct, its
//! defaults, `NAMES`, `set` and `get` are generated from it.

#[macro_use]
mod named;
mod durability;
mod layout;
mod policy_kind;
mod profile;
mod value;

pub use durability::Durability;
pub use layout::Layout;
pub use policy_kind::PolicyKind;
pub use profile::Profile;

use crate::error::{Error, Result};
use crate::format::checksum;
use crate::format::key_order::BYTEWISE_NAME;
use crate::format::KeyOrder;
use crate::io::{FileSystem, PosixFs};
use crate::log::RecoveryMode;
use std::path::Path;
use std::sync::Arc;

use crate::table::{BlockCache, CompressionType, FilterPolicy, TableOptions};
use value::OptionValue;

/// Declares `Options`: persisted tunables (in `NAMES` order, written to
/// the `OPTIONS` file) and per-open switches (settable, never persisted),
/// each with its scope and its layout.
///
/// The scope: `store` (one value for the whole store: the key order, the
/// log, caches, threads, file handling; a keyspace takes the store's) or
/// `keyspace` (each keyspace may choose its own).
///
/// The layout that reads the option: `lsm`, `chunked` or `both`. The other
/// layout ignores the option, whatever its value; `needs_chunked` is
/// `chunked` for an option whose other values than the default ask for
/// what only the chunked layout does (`durability=async`: the LSM has no
/// checkpoints), so `validate` refuses them under the LSM.
macro_rules! options {
    (@take_store_wide $self:ident $store:ident $name:ident store) => {
        $self.$name = $store.$name.clone();
    };
    (@take_store_wide $self:ident $store:ident $name:ident keyspace) => {};
    (@reads lsm $layout:ident) => { $layout == Layout::Lsm };
    (@reads chunked $layout:ident) => { $layout == Layout::Chunked };
    (@reads needs_chunked $layout:ident) => { $layout == Layout::Chunked };
    (@reads both $layout:ident) => { true };
    (@check_layout $self:ident $name:ident needs_chunked $default:expr) => {
        if $self.layout != Layout::Chunked && $self.$name != $default {
            return Err(Error::InvalidArgument(format!(
                "{}={} needs layout={}",
                stringify!($name),
                $self.$name.show(),
                Layout::Chunked
            )));
        }
    };
    (@check_layout $self:ident $name:ident $layout:ident $default:expr) => {};
    (
        persisted { $($(#[doc = $pdoc:literal])* $pname:ident: $pty:ty = $pdefault:expr; $pscope:ident, $playout:ident,)* }
        per_open { $($(#[doc = $odoc:literal])* $oname:ident: $oty:ty = $odefault:expr; $oscope:ident, $olayout:ident,)* }
    ) => {
        /// Tunables of a store. Build from `Profile::options()` or `Default`,
        /// then chain the builder methods (one per field, named like it),
        /// assign fields, or call [`Options::set`] by name. New options are
        /// added over time, so the struct cannot be built literally.
        ///
        /// ```
        /// use thicketdb::{Options, Profile};
        /// let options = Profile::Bolt
        ///     .options()
        ///     .write_buffer_size(8 << 20)
        ///     .bloom_bits_per_key(12);
        /// assert_eq!(options.write_buffer_size, 8 << 20);
        /// let mut by_name = Options::default();
        /// by_name.set("bloom_bits_per_key", "12")?;
        /// assert_eq!(by_name.bloom_bits_per_key, 12);
        /// # Ok::<(), thicketdb::Error>(())
        /// ```
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub struct Options {
            /// The preset these options came from; persisted and checked on open.
            pub profile: Profile,
            $($(#[doc = $pdoc])* pub $pname: $pty,)*
            $($(#[doc = $odoc])* pub $oname: $oty,)*
        }

        impl Default for Options {
            fn default() -> Options {
                Options {
                    profile: Profile::Default,
                    $($pname: $pdefault,)*
                    $($oname: $odefault,)*
                }
            }
        }

        impl Options {
            $(
                #[doc = concat!("Returns the options with `", stringify!($pname), "` set to `value`.")]
                #[must_use]
                pub fn $pname(mut self, value: $pty) -> Options {
                    self.$pname = value;
                    self
                }
            )*
            $(
                #[doc = concat!("Returns the options with `", stringify!($oname), "` set to `value`.")]
                #[must_use]
                pub fn $oname(mut self, value: $oty) -> Options {
                    self.$oname = value;
                    self
                }
            )*

            /// `self` (a keyspace's requested options) with every
            /// store-scoped option taken from `store`.
            pub(crate) fn with_store_wide(mut self, store: &Options) -> Options {
                $(options!(@take_store_wide self store $pname $pscope);)*
                $(options!(@take_store_wide self store $oname $oscope);)*
                self
            }

            /// Whether a store of `layout` reads the option `name` (see
            /// [`Options::set`]); the other layout ignores it. False for a
            /// name that is no option.
            ///
            /// ```
            /// use thicketdb::{Layout, Options};
            /// assert!(Options::is_read_by("chunk_size", Layout::Chunked));
            /// assert!(!Options::is_read_by("chunk_size", Layout::Lsm));
            /// assert!(Options::is_read_by("block_size", Layout::Lsm));
            /// ```
            pub fn is_read_by(name: &str, layout: Layout) -> bool {
                match name {
                    $(stringify!($pname) => options!(@reads $playout layout),)*
                    $(stringify!($oname) => options!(@reads $olayout layout),)*
                    _ => false,
                }
            }

            /// Refuses an option value that asks for what only another
            /// layout does (declared `needs_chunked`).
            fn check_layout(&self) -> Result<()> {
                $(options!(@check_layout self $pname $playout $pdefault);)*
                $(options!(@check_layout self $oname $olayout $odefault);)*
                Ok(())
            }

            /// Names accepted by [`Options::set`], in the order they are persisted.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($pname),)*];

            /// Sets one option from its textual form (`--option NAME=VALUE`).
            pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
                match name {
                    $(stringify!($pname) => self.$pname = OptionValue::parse_option(name, value)?,)*
                    $(stringify!($oname) => self.$oname = OptionValue::parse_option(name, value)?,)*
                    _ => {
                        return Err(Error::InvalidArgument(format!(
                            "unknown option {name:?} (known: {})",
                            Options::NAMES.join(", ")
                        )))
                    }
                }
                Ok(())
            }

            /// Every field's name and `Debug` value, the profile first:
            /// derived from the declaration, so a test comparing profiles
            /// sees an option the day it is added.
            #[cfg(test)]
            pub(crate) fn fields(&self) -> Vec<(&'static str, String)> {
                let mut fields = vec![("profile", format!("{:?}", self.profile))];
                $(fields.push((stringify!($pname), format!("{:?}", self.$pname)));)*
                $(fields.push((stringify!($oname), format!("{:?}", self.$oname)));)*
                fields
            }

            /// The textual value of a persisted option.
            pub fn get(&self, name: &str) -> Option<String> {
                match name {
                    $(stringify!($pname) => Some(self.$pname.show()),)*
                    _ => None,
                }
            }
        }
    };
}

options! {
    persisted {
        /// Bytes a memtable may hold before it is switched and flushed.
        write_buffer_size: u64 = 64 << 20; keyspace, lsm,
        /// Immutable memtables waiting for flush before writers stop.
        max_immutable_memtables: usize = 2; keyspace, lsm,
        /// Size at which flush and compaction cut output tables.
        target_table_size: u64 = 2 << 20; keyspace, lsm,
        /// Uncompressed size of a data block.
        block_size: usize = TableOptions::DEFAULT.block_size; keyspace, both,
        /// A data block that ends within 512 bytes of a 4 KiB page
        /// boundary its next entry would cross ends there, and zeros fill
        /// the page, so the next block starts on the boundary: with entries
        /// of up to a few hundred bytes a block read from the device is one
        /// page, not the two an unaligned block spans (after RocksDB's
        /// `block_align`, which pads every block).
        block_align: bool = true; keyspace, both,
        /// Keys between restart points in a block.
        block_restart_interval: usize = TableOptions::DEFAULT.restart_interval; keyspace, both,
        /// Bloom filter bits per key; 0 disables filters.
        bloom_bits_per_key: u32 = TableOptions::DEFAULT.bloom_bits_per_key; keyspace, both,
        /// Block compression for new tables.
        compression: CompressionType = TableOptions::DEFAULT.compression; keyspace, both,
        /// Bytes of the shared block cache.
        block_cache_size: u64 = 64 << 20; store, both,
        /// Charge each open table's index, filter, range tombstones and
        /// properties to the block cache, so that `block_cache_size` bounds
        /// them and the cached blocks together (RocksDB can do the same;
        /// LevelDB keeps them outside, bounded by `max_open_files` only).
        charge_table_metadata: bool = true; keyspace, both,
        /// Open segment files kept in the descriptor cache (chunked: funk
        /// tables kept open, each with its descriptor and metadata).
        max_open_files: usize = 1000; store, both,
        /// L0 runs that trigger an L0 compaction.
        l0_compaction_trigger: usize = 4; keyspace, lsm,
        /// L0 runs from which each write is delayed.
        l0_slowdown_writes_trigger: usize = 8; keyspace, lsm,
        /// L0 runs at which writes wait for compaction.
        l0_stop_writes_trigger: usize = 12; keyspace, lsm,
        /// Pending compaction bytes from which each write is delayed.
        soft_pending_compaction_bytes: u64 = 64 << 30; keyspace, lsm,
        /// Pending compaction bytes at which writes wait for compaction.
        hard_pending_compaction_bytes: u64 = 256 << 30; keyspace, lsm,
        /// How log corruption found during recovery is handled.
        wal_recovery_mode: RecoveryMode = RecoveryMode::TolerateTailCorruption; store, both,
        /// Write logs through a shared memory map: an append survives a
        /// process crash without a `write(2)` per write group (false: one
        /// `write(2)` per group, as LevelDB and RocksDB do).
        log_mmap: bool = true; store, lsm,
        /// The shape of the tree: `leveled` or `tiered`.
        compaction_policy: PolicyKind = PolicyKind::Leveled; keyspace, lsm,
        /// Tiered: runs a level holds before they are merged into the next.
        runs_per_level: usize = 4; keyspace, lsm,
        /// Tiered: a merge moves the input tables that overlap no other
        /// input into the new run by metadata, rewriting only overlaps
        /// (SifrDB's split storing); false rewrites every input table, as
        /// Size-Tiered and the stepped merge do.
        tiered_split_storing: bool = true; keyspace, lsm,
        /// Background threads running compactions (flushes have their own).
        /// Tasks on disjoint key ranges and levels run concurrently.
        compaction_threads: usize = 1; store, lsm,
        /// Tiered: a merge expected to write at least this many tables
        /// checkpoints every this many tables, releasing consumed inputs
        /// early (SifrDB's early cleaning with a compaction journal); 0
        /// disables it.
        early_cleaning_threshold: usize = 10; keyspace, lsm,
        /// Byte target of L1; deeper levels grow by `level_size_multiplier`.
        max_bytes_for_level_base: u64 = 256 << 20; keyspace, lsm,
        /// Growth factor between level targets.
        level_size_multiplier: u64 = 10; keyspace, lsm,
        /// Leveled: when non-zero, L1's target is this many
        /// `write_buffer_size`s instead of `max_bytes_for_level_base`, so
        /// the tree keeps its shape whatever the memtable (LSbM's levels are
        /// r = 10 times the one above, L0 included: §VI).
        level_base_write_buffers: u64 = 0; keyspace, lsm,
        /// Leveled: derive level targets from the largest level and compact
        /// L0 into the shallowest level that needs a target, as RocksDB's
        /// `level_compaction_dynamic_level_bytes` (false: L1 gets
        /// `max_bytes_for_level_base`, as LevelDB).
        dynamic_level_bytes: bool = true; keyspace, lsm,
        /// Leveled: level sizing follows `write_buffer_size`. Unless
        /// `level_base_write_buffers` says otherwise, the base level's
        /// ceiling is `level_size_multiplier` memtables, at most
        /// `max_bytes_for_level_base` (L0 counts as a level of about one
        /// memtable, as LSbM's r-times levels); and L0 may hold
        /// `max_bytes_for_level_base` of small runs before writes slow,
        /// up to RocksDB's 20 runs (slowdown) and 36 (stop). Under 1 MiB
        /// memtables a 256 MiB base level was rewritten by every L0
        /// compaction of 4 MiB (device write amplification 24 against
        /// RocksDB's 9; issue 38). false: the configured bytes and counts.
        level_sizing_from_memtable: bool = true; keyspace, lsm,
        /// BoLT compaction file: all tables of a flush or compaction in one
        /// segment with one fsync (false: one segment and fsync per table).
        compaction_file: bool = true; keyspace, lsm,
        /// BoLT group compaction: victims per task up to this many bytes (0:
        /// one victim table, as LevelDB).
        group_compaction_bytes: u64 = 64 << 20; keyspace, lsm,
        /// BoLT group compaction: a group also stops at this share of its
        /// level's byte target (0: `group_compaction_bytes` alone, as the
        /// paper). The paper's 64 MiB group is a slice of the levels of its
        /// 50 GB store; in a store a hundred times smaller it is most of a
        /// level, and each group compaction rewrites most of the level below.
        group_compaction_level_share: f64 = 0.0; keyspace, lsm,
        /// BoLT settled compaction: victims with the least overlap, and
        /// those without overlap promoted by metadata only.
        settled_compaction: bool = true; keyspace, lsm,
        /// Leveled: an output table of a compaction ends before it overlaps
        /// more than this many `target_table_size`s of the level below its
        /// output, and a flush moves below L0 only within that bound
        /// (LevelDB's grandparent overlap: 10); 0 disables the cut.
        grandparent_overlap_factor: u64 = 0; keyspace, lsm,
        /// Leveled: the deepest level a flushed run that overlaps nothing
        /// may go to directly (LevelDB's `kMaxMemCompactLevel`: 2); 0
        /// flushes always to L0.
        max_mem_compact_level: usize = 0; keyspace, lsm,
        /// A flush writes the memtable as one table, as LevelDB does
        /// (false: tables of `target_table_size`).
        flush_one_table: bool = false; keyspace, lsm,
        /// BoLT descriptor cache: tables of a segment share one open file
        /// (false: every table opens its own descriptor, as LevelDB's
        /// TableCache).
        segment_descriptor_cache: bool = true; store, lsm,
        /// LSbM buffered merge: a table merged from level n ≥ 1 into n+1
        /// joins n+1's compaction buffer unchanged (metadata only), so its
        /// cached blocks stay valid; reads use the buffer first. Needs the
        /// `leveled` policy.
        lsbm_buffer: bool = false; keyspace, lsm,
        /// LSbM trim: milliseconds between trims of the compaction buffer
        /// (0: trim after every compaction).
        lsbm_trim_interval: u64 = 30_000; keyspace, lsm,
        /// LSbM trim: a buffer table (outside its level's newest buffer
        /// run) whose share of blocks in the block cache is below this is
        /// removed.
        lsbm_trim_threshold: f64 = 0.8; keyspace, lsm,
        /// LSbM: bytes the compaction buffer may hold; past it the oldest
        /// buffer runs' tables are removed.
        lsbm_max_buffer_bytes: u64 = 1 << 30; keyspace, lsm,
        /// LSbM range reads (Algorithm 4): iterators take a level's data
        /// from its buffer runs where those hold all of it (false: from
        /// the level's own run only, as before the buffer). Needs
        /// `lsbm_buffer`.
        lsbm_range_reads: bool = true; keyspace, lsm,
        /// LSbM range reads: choose per query and level by the block
        /// cache (the residency counts of §IV-B): the buffer serves a
        /// query only when the level's table where it starts holds under
        /// `lsbm_trim_threshold` of its blocks in the cache and the buffer
        /// tables there hold more (false: the buffer serves wherever it
        /// holds the level's data, as the paper's Algorithm 4).
        lsbm_range_by_cache: bool = true; keyspace, lsm,
        /// LSbM super-files (§IV-C): flushes and compactions write this
        /// many consecutive tables per segment, and the leveled policy
        /// takes victims a whole super-file at a time, while the buffer
        /// still trims single tables. 1: tables are units on their own
        /// (segments as `compaction_file` says).
        lsbm_superfile_tables: usize = 1; keyspace, lsm,
        /// TRIAD-DISK: defer an L0 compaction while the key overlap of the
        /// L0 tables and the L1 tables under them is low (leveled only).
        triad_disk: bool = false; keyspace, lsm,
        /// TRIAD-DISK: the overlap ratio, 1 - unique keys / sum of keys (by
        /// HyperLogLog), from which an L0 compaction runs.
        triad_overlap_threshold: f64 = 0.4; keyspace, lsm,
        /// TRIAD-DISK: L0 runs beyond which an L0 compaction runs whatever
        /// the overlap (the paper's MAX_FILES_L0; one flush is one run).
        triad_max_l0_files: usize = 6; keyspace, lsm,
        /// TRIAD-DISK: the overlap ratio counts the L1 tables under L0
        /// besides L0's own (§4.2's text and Figure 5); false: L0's tables
        /// alone (Algorithm 2's `deferCompaction`). On a prefilled store
        /// the L1 tables dilute the ratio toward 0, so with true the
        /// deferral mostly waits for `triad_max_l0_files`.
        triad_overlap_with_l1: bool = true; keyspace, lsm,
        /// TRIAD-MEM: a flush keeps the hottest keys of the memtable in
        /// memory (carried into the active memtable and re-logged) and
        /// writes only the cold ones.
        triad_mem: bool = false; keyspace, lsm,
        /// TRIAD-MEM: hot keys kept per flush, as a fraction of the
        /// memtable's entries (the paper's PERC_HOT).
        triad_hot_fraction: f64 = 0.01; keyspace, lsm,
        /// TRIAD FLUSH_TH: when the memtable (and with it the log) is full
        /// but the newest versions of its keys take less than this fraction
        /// of `write_buffer_size`, write them to a fresh log, drop the old
        /// log and keep going instead of flushing; 0 disables it.
        triad_flush_threshold: f64 = 0.0; keyspace, lsm,
        /// TRIAD's C_m (Algorithm 1): a write over a key whose newest
        /// version in the active memtable is a value of the same length
        /// overwrites that value in place (one entry per key, its update
        /// count kept), unless a snapshot or iterator may read the older
        /// version; so the memtable holds distinct keys and the log fills
        /// first (`triad_log_limit`). Bytewise order only (ignored with a
        /// custom comparator).
        triad_in_place: bool = false; keyspace, lsm,
        /// TRIAD-LOG: a flush writes a log table (each key's address in the
        /// memtable's log, no value copied) instead of a table, and the log
        /// lives as long as a live log table references it.
        triad_log: bool = false; store, lsm,
        /// How the store organises its data: `lsm` (levels of runs, every
        /// option above) or `chunked` (YoDB's range-partitioned chunks,
        /// the `chunk_*`, `funk_*` and `log_filter_*` options).
        layout: Layout = Layout::Lsm; keyspace, both,
        /// Chunked: a funk rebalance whose chunk holds more than this many
        /// bytes of entries splits it (YoDB's chunk size limit).
        chunk_size: u64 = 10 << 20; keyspace, chunked,
        /// Chunked: the share of `chunk_size` a split fills each new chunk
        /// to (YoDB's rebalance factor), leaving room to grow.
        chunk_fill_factor: f64 = 0.7; keyspace, chunked,
        /// Chunked: bytes a chunk log may hold before a funk rebalance
        /// merges it into the chunk's table (YoDB: 2 MiB for munk-less
        /// chunks).
        funk_log_limit: u64 = 2 << 20; keyspace, chunked,
        /// Chunked: the least share of `funk_log_limit` a munk-less
        /// chunk's log limit shrinks to as reads outweigh writes among its
        /// recent accesses (YoDB §5.3: a scan-heavy load gains from 512 KB
        /// logs, a write-heavy one from 2 MB); the limit is
        /// `funk_log_limit` times twice the writes' share, within this and
        /// 1. 1 keeps the limit fixed.
        funk_log_limit_min_share: f64 = 0.25; keyspace, chunked,
        /// Chunked: Bloom filters a chunk log's keys are split into, each
        /// over one part of the log, so a get knows whether and where to
        /// search it (YoDB: 16).
        log_filter_parts: usize = 16; keyspace, chunked,
        /// Chunked: a chunk with a munk (its image in memory) merges its
        /// log into its table only past this many bytes (YoDB: 20 MiB);
        /// its gets never read the log.
        funk_log_limit_with_munk: u64 = 20 << 20; keyspace, chunked,
        /// Chunked: bytes of munks kept in memory, the hottest chunks' by
        /// an LFU score with exponential decay (0: no munks).
        munk_cache_bytes: u64 = 256 << 20; store, chunked,
        /// Chunked: munks are the paper's array list with a sorted prefix
        /// instead of the engine's skiplist (faster gets and puts, slower
        /// scans: `docs/benchmarks.md`, *YoDB part 1*).
        munk_array_list: bool = false; keyspace, chunked,
        /// Chunked: bytes of the row cache of single key-value pairs from
        /// munk-less chunks (0: no row cache).
        row_cache_bytes: u64 = 64 << 20; store, chunked,
        /// Chunked: hash tables in the row cache's queue; the oldest is
        /// dropped whole when the newest fills (YoDB: 3).
        row_cache_tables: usize = 3; store, chunked,
        /// Chunked: background threads building funk rebalances and
        /// splits (YoDB's dedicated background thread): a write that finds
        /// its chunk's log past its limit queues the chunk and returns; a
        /// log past twice its limit makes the write wait for the build.
        /// 0: the write builds the new funk itself before it returns.
        chunk_rebalance_threads: usize = 1; keyspace, chunked,
        /// Chunked: `sync` (`WriteOptions::sync` decides per write) or
        /// `async` (YoDB's asynchronous mode: a background checkpointer
        /// makes the writes durable every `checkpoint_interval`; recovery
        /// returns to the last checkpoint without reading the logs).
        durability: Durability = Durability::Sync; keyspace, needs_chunked,
        /// Chunked, `durability=async`: milliseconds between checkpoints.
        checkpoint_interval: u64 = 1000; keyspace, chunked,
        /// Chunked: the high bits of a sequence number that count
        /// recoveries (YoDB's incarnation; the paper's 4). Fixed when the
        /// store is created (`RECOVERY`).
        incarnation_bits: u32 = 4; keyspace, chunked,
    }
    per_open {
        /// Chunked: bytes of memory all chunk logs' write buffers may hold
        /// together (the asynchronous mode writes a log's appends in
        /// groups, one `write` each): a log writes its group out, and
        /// frees the buffer, once it holds this budget over twice the
        /// number of chunks, so the buffers stay within the budget however
        /// many chunks the data grows to. 0: one `write` per append.
        chunk_log_buffer_bytes: u64 = 4 << 20; store, chunked,
        /// TRIAD-LOG: bytes of verified log fragments cached for reads of
        /// log tables' values, taken from `block_cache_size` (up to half of
        /// it) when the store has a block cache of its own; 0 reads every
        /// value from its log.
        triad_log_cache_size: u64 = 16 << 20; store, lsm,
        /// TRIAD's commit-log limit, in memtables (`write_buffer_size`s):
        /// when the active log reaches it the memtables are treated as
        /// full, so FLUSH_TH (`triad_flush_threshold`) decides between
        /// rewriting the log and flushing (Algorithm 1's FLUSH, run when
        /// the log is full; the paper's log is larger than C_m). With
        /// in-place updates the memtable fills with distinct keys only
        /// and the log with every write. 0: no limit of its own (the log is
        /// full when a memtable is); else at least 1 (a rewritten log holds
        /// up to FLUSH_TH of a memtable: a smaller limit would rewrite it
        /// at every write).
        triad_log_limit: f64 = 0.0; store, lsm,
        /// Microseconds a writer queued behind a write group yields the
        /// CPU (`sched_yield`) before it sleeps on the queue's condition
        /// variable (RocksDB's `write_thread_max_yield_usec` with
        /// `enable_write_thread_adaptive_yield`): a group commits in a few
        /// microseconds, and a sleep costs each follower a futex wait and
        /// a wake-up. 0 sleeps at once, as LevelDB does (`leveldb` and the
        /// profiles built on it). Measured: fillrandom, 4 client threads,
        /// 2 cores, 196-208k ops/s at 0 against 393-415k at 50
        /// (docs/benchmarks.md, "Write queue: adaptive yield").
        write_thread_max_yield_micros: u64 = 50; store, lsm,
        /// TRIAD-LOG: value bytes of its log tables a compaction holds in
        /// memory (at least 64 KiB). Before the merge each log the log
        /// tables address is read once, in offset order, in spans of
        /// consecutive blocks (a table's values lie scattered over its
        /// log); the values past this budget are sorted into runs in a
        /// scratch file, written and read once (`version/log_prefetch.rs`);
        /// 0 reads one value at a time from its log.
        triad_log_compaction_batch: u64 = 2 << 20; store, lsm,
        /// A compaction reads each input table this many bytes at a time,
        /// through a descriptor of its own without kernel read-ahead, so it
        /// reads exactly its tables, in large reads (RocksDB's
        /// `compaction_readahead_size`); 0: block by block through the
        /// shared descriptor, with the kernel's read-ahead (LevelDB). The
        /// kernel's read-ahead does not know where a table ends: in a
        /// segment of many tables (a compaction file) it reads neighbours
        /// too, up to the device's `read_ahead_kb` (8 MiB on the test VM),
        /// and under a memory cap those pages evict pages others need. Off
        /// by default: measured on the scaled BoLT Figure 12 it cut device
        /// reads by a third but lost 11% of `leveldb`'s fill speed, since
        /// each span is read synchronously where the kernel's read-ahead
        /// overlapped the reads with the merge (docs/reproduction.md).
        compaction_readahead_bytes: u64 = 0; store, lsm,
        /// A Bloom filter over each memtable's user keys, of this fraction
        /// of `write_buffer_size` (RocksDB's
        /// `memtable_prefix_bloom_size_ratio` with whole-key filtering):
        /// a get of a key the memtable does not hold skips its search.
        /// 0: none; at most 0.25.
        memtable_bloom_size_ratio: f64 = 0.01; keyspace, lsm,
        /// Create the store when the directory holds none.
        create_if_missing: bool = true; store, both,
        /// Refuse to open a store that already exists.
        error_if_exists: bool = false; store, both,
        /// No background compaction, as RocksDB's option of that name:
        /// only `compact_range` compacts (an interrupted journaled merge
        /// waits for it too). L0 and pending-bytes write stalls are off,
        /// for nothing would end them.
        disable_auto_compactions: bool = false; keyspace, lsm,
        /// Threads probing a point lookup's candidate tables in parallel
        /// (SifrDB's parallel search), the caller's included; 0: one per
        /// core; 1: the serial search. Serial by default: with blocks in
        /// memory the hand-off costs more than it saves (docs/profiles.md).
        search_threads: usize = 1; store, lsm,
        /// Lookups with fewer candidate tables (runs whose key range and
        /// filter admit the key) are searched serially.
        parallel_search_min_candidates: usize = 2; keyspace, lsm,
        /// Builds new tables' filters instead of the built-in Bloom filter
        /// (then `bloom_bits_per_key` is unused); a table's filter is used
        /// only under a policy of the name it was built by. Set through
        /// the API, not by name.
        filter_policy: Option<Arc<dyn FilterPolicy>> = None; store, both,
        /// A block cache shared with other stores, instead of one of
        /// `block_cache_size` for this open alone. Set through the API,
        /// not by name.
        block_cache: Option<BlockCache> = None; store, both,
        /// The order of the keys: bytewise, or a user's comparator
        /// ([`KeyOrder::custom`]), which can only be given in code. The
        /// store records its name when created and refuses to open with
        /// another.
        comparator: KeyOrder = KeyOrder::Bytewise; store, both,
        /// Read table blocks with `O_DIRECT`, bypassing the page cache, so
        /// a block the block cache misses costs a device read (RocksDB's
        /// option of that name). Refused with a clear error by a file
        /// system without `O_DIRECT` (tmpfs).
        use_direct_reads: bool = false; store, lsm,
        /// Write the tables of flushes and compactions with `O_DIRECT`,
        /// around the page cache, so they do not push out the pages
        /// readers need (RocksDB's option of that name). Logs and the
        /// MANIFEST stay buffered. Refused with a clear error by a file
        /// system without `O_DIRECT` (tmpfs).
        use_direct_io_for_flush_and_compaction: bool = false; store, lsm,
    }
}

impl Options {
    /// Bytes of each memtable's Bloom filter (`memtable_bloom_size_ratio`
    /// of `write_buffer_size`).
    pub(crate) fn memtable_filter_bytes(&self) -> usize {
        (self.write_buffer_size as f64 * self.memtable_bloom_size_ratio) as usize
    }

    /// L1's byte target: `level_base_write_buffers` memtables, or
    /// `max_bytes_for_level_base`.
    pub fn level_base_bytes(&self) -> u64 {
        match self.level_base_write_buffers {
            0 if self.level_sizing_from_memtable => self.max_bytes_for_level_base.min(
                self.write_buffer_size
                    .saturating_mul(self.level_size_multiplier.max(1)),
            ),
            0 => self.max_bytes_for_level_base,
            n => self.write_buffer_size.saturating_mul(n),
        }
    }

    /// The L0 runs from which writes slow down and at which they stop.
    /// With `level_sizing_from_memtable`, the slowdown count rises to the
    /// runs of `max_bytes_for_level_base` (so that L0 may hold the bytes
    /// the counts give large memtables) up to RocksDB's 20, and the stop
    /// count rises along the line from the configured pair to RocksDB's
    /// (20, 36); never below the configured counts.
    pub fn l0_stall_triggers(&self) -> (usize, usize) {
        let (slow, stop) = (self.l0_slowdown_writes_trigger, self.l0_stop_writes_trigger);
        if !self.level_sizing_from_memtable || slow >= ROCKSDB_L0_SLOWDOWN {
            return (slow, stop);
        }
        let runs = self
            .max_bytes_for_level_base
            .div_ceil(self.write_buffer_size.max(1));
        let raised = usize::try_from(runs)
            .unwrap_or(usize::MAX)
            .clamp(slow, ROCKSDB_L0_SLOWDOWN);
        // The stop count keeps at least the slowdown's rise, so it never
        // falls below the raised slowdown count.
        let span = ROCKSDB_L0_SLOWDOWN - slow;
        let stop_span = ROCKSDB_L0_STOP.saturating_sub(stop).max(span);
        (raised, stop + (raised - slow) * stop_span / span)
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
        // Early cleaning releases the input tables a checkpoint has
        // consumed, and a resumed merge moves the ones it has not touched:
        // both need the split storing of the runs.
        if self.compaction_policy == PolicyKind::Tiered
            && !self.tiered_split_storing
            && self.early_cleaning_threshold > 0
        {
            return bad("tiered_split_storing=false needs early_cleaning_threshold=0");
        }
        if self.compaction_threads == 0 || self.compaction_threads > MAX_COMPACTION_THREADS {
            return Err(Error::InvalidArgument(format!(
                "compaction_threads must be between 1 and {MAX_COMPACTION_THREADS}"
            )));
        }
        if !(0.0..=1.0).contains(&self.group_compaction_level_share) {
            return bad("group_compaction_level_share must be between 0 and 1");
        }
        if !(0.0..=1.0).contains(&self.lsbm_trim_threshold) {
            return bad("lsbm_trim_threshold must be between 0 and 1");
        }
        if !(0.0..=0.25).contains(&self.memtable_bloom_size_ratio) {
            return bad("memtable_bloom_size_ratio must be between 0 and 0.25");
        }
        if self.lsbm_superfile_tables == 0 {
            return bad("lsbm_superfile_tables must be at least 1");
        }
        if self.lsbm_buffer && self.compaction_policy != PolicyKind::Leveled {
            return bad("lsbm_buffer needs the leveled compaction policy");
        }
        // LSbM keeps an L0 compaction's inputs as L1's buffer and keeps or
        // trims them by how much of their data blocks the block cache holds;
        // a log table's data are its log, which the buffer would pin for as
        // long as it keeps the table, judged by blocks that hold addresses.
        if self.lsbm_buffer && self.triad_log {
            return bad(
                "triad_log cannot be combined with lsbm_buffer: the compaction buffer would keep \
                 log tables (and pin their logs) by the cached share of their address blocks",
            );
        }
        // The buffer never answers with a stale version only because every
        // table bringing data into a level joins that level's buffer (see
        // `version::lsbm_buffer`). A flush placed below L0 brings data into
        // a level past the buffer: an older copy in an older buffer run
        // would then answer a lookup. (An L0 compaction into a dynamic base
        // level is a compaction: its L0 tables join the base level's buffer.)
        if self.lsbm_buffer && self.max_mem_compact_level > 0 {
            return bad(
                "lsbm_buffer needs max_mem_compact_level=0: a flush placed below L0 would \
                 bypass the level's compaction buffer, which could then answer with a stale version",
            );
        }
        if self.dynamic_level_bytes && self.max_mem_compact_level > 0 {
            // A flush placed below L0 would pick the base level by itself.
            return bad(
                "dynamic_level_bytes compacts L0 into the base level: set max_mem_compact_level=0",
            );
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
        if self.chunk_size < 4096 {
            return bad("chunk_size must be at least 4096");
        }
        if !(0.1..=1.0).contains(&self.chunk_fill_factor) {
            return bad("chunk_fill_factor must be between 0.1 and 1");
        }
        if self.funk_log_limit < 1024 {
            return bad("funk_log_limit must be at least 1024");
        }
        if !(0.01..=1.0).contains(&self.funk_log_limit_min_share) {
            return bad("funk_log_limit_min_share must be between 0.01 and 1");
        }
        if !(2..=64).contains(&self.row_cache_tables) {
            return bad("row_cache_tables must be between 2 and 64");
        }
        if self.funk_log_limit_with_munk < 1024 {
            return bad("funk_log_limit_with_munk must be at least 1024");
        }
        if self.chunk_rebalance_threads > MAX_CHUNK_REBALANCE_THREADS {
            return Err(Error::InvalidArgument(format!(
                "chunk_rebalance_threads must be at most {MAX_CHUNK_REBALANCE_THREADS}"
            )));
        }
        if !(1..=8).contains(&self.incarnation_bits) {
            return bad("incarnation_bits must be between 1 and 8");
        }
        if self.checkpoint_interval == 0 {
            return bad("checkpoint_interval must be at least 1 (milliseconds)");
        }
        self.check_layout()?;
        if !(1..=1024).contains(&self.log_filter_parts) {
            return bad("log_filter_parts must be between 1 and 1024");
        }
        if !(0.0..=0.9).contains(&self.triad_flush_threshold) {
            return bad("triad_flush_threshold must be between 0 and 0.9");
        }
        if self.triad_log_limit != 0.0 && !(1.0..=1024.0).contains(&self.triad_log_limit) {
            return bad("triad_log_limit must be 0 or between 1 and 1024 memtables");
        }
        if !(0.0..=0.5).contains(&self.triad_hot_fraction) {
            return bad("triad_hot_fraction must be between 0 and 0.5");
        }
        if !(0.0..=1.0).contains(&self.triad_overlap_threshold) {
            return bad("triad_overlap_threshold must be between 0 and 1");
        }
        // A deferral keeps up to `triad_max_l0_files` runs in L0: writes
        // must not slow down for a deferral alone.
        if self.triad_disk && self.l0_slowdown_writes_trigger <= self.triad_max_l0_files {
            return bad(
                "with triad_disk, l0_slowdown_writes_trigger must exceed triad_max_l0_files",
            );
        }
        Ok(())
    }

    /// Tables a flush or compaction writes per segment: a super-file's
    /// count, all of them (BoLT's compaction file) or one each.
    pub fn segment_tables(&self) -> usize {
        match self.lsbm_superfile_tables {
            1 if self.compaction_file => usize::MAX,
            1 => 1,
            n => n,
        }
    }

    /// The table-format part of the options.
    pub fn table_options(&self) -> TableOptions {
        TableOptions {
            block_size: self.block_size,
            block_align: self.block_align,
            restart_interval: self.block_restart_interval,
            bloom_bits_per_key: self.bloom_bits_per_key,
            compression: self.compression,
            filter_policy: self.filter_policy.clone(),
            order: self.comparator.clone(),
            log_refs: None,
            // A keyspace's flushes and compactions set their own.
            keyspace: 0,
        }
    }

    /// The persisted form: a versioned text file with a checksum line (see
    /// `docs/format.md`).
    pub fn encode(&self) -> String {
        let mut body = format!(
            "{OPTIONS_HEADER}\nprofile={}\ncomparator={}\n",
            self.profile,
            self.comparator.name()
        );
        for name in Options::NAMES {
            if let Some(v) = self.get(name) {
                body.push_str(&format!("{name}={v}\n"));
            }
        }
        let crc = checksum::crc32c(body.as_bytes());
        body.push_str(&format!("crc32c={crc:08x}\n"));
        body
    }

    /// Parses a persisted `OPTIONS` file; `file` names it in errors. The
    /// options' comparator is the built-in one: see [`Options::decode_recorded`].
    pub fn decode(file: &str, text: &[u8]) -> Result<Options> {
        Options::decode_recorded(file, text).map(|(options, _)| options)
    }

    /// Like [`Options::decode`], also returning the name of the comparator
    /// the store was created with (the built-in one's for stores that
    /// predate the record).
    pub fn decode_recorded(file: &str, text: &[u8]) -> Result<(Options, String)> {
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
        let mut comparator = BYTEWISE_NAME.to_string();
        for (name, value) in pairs.into_iter().filter(|(name, _)| *name != "profile") {
            if name == "comparator" {
                // A custom comparator is code: only its name is recorded.
                comparator = value.to_string();
                continue;
            }
            options
                .set(name, value)
                .map_err(|e| corrupt(0, &format!("bad option line {name}={value}: {e}")))?;
        }
        Ok((options, comparator))
    }
}

/// RocksDB's default L0 slowdown and stop counts
/// (`level0_slowdown_writes_trigger`, `level0_stop_writes_trigger`), the
/// most `level_sizing_from_memtable` raises the configured ones to.
const ROCKSDB_L0_SLOWDOWN: usize = 20;
const ROCKSDB_L0_STOP: usize = 36;

const OPTIONS_HEADER: &str = "thicketdb-options 1";

/// The file in a store's directory that records its options.
pub(crate) const OPTIONS_FILE_NAME: &str = "OPTIONS";

impl Options {
    /// The options the store in `dir` was created with (its `OPTIONS`
    /// file, with the tunables it recorded), or `None` when `dir` holds no
    /// such file: no store, or an LSM store older than the file.
    ///
    /// ```
    /// use thicketdb::{Db, Options, Profile};
    /// let dir = tempfile::tempdir()?;
    /// assert_eq!(Options::load(dir.path())?, None);
    /// drop(Db::open(dir.path(), Profile::Bolt.options())?);
    /// assert_eq!(Options::load(dir.path())?.map(|o| o.profile), Some(Profile::Bolt));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load(dir: impl AsRef<Path>) -> Result<Option<Options>> {
        Ok(Options::load_recorded(&PosixFs, dir.as_ref())?.map(|(options, _)| options))
    }

    /// Like [`Options::load`] through `fs`, also returning the recorded
    /// comparator's name (see [`Options::decode_recorded`]).
    pub(crate) fn load_recorded(
        fs: &dyn FileSystem,
        dir: &Path,
    ) -> Result<Option<(Options, String)>> {
        let path = dir.join(OPTIONS_FILE_NAME);
        if !fs.exists(&path) {
            return Ok(None);
        }
        let text = fs.read_to_vec(&path)?;
        Options::decode_recorded(&path.display().to_string(), &text).map(Some)
    }
}

/// More compaction threads than this only contend: a task needs a level
/// (and key range) no other task touches, and a tree has few levels.
pub const MAX_COMPACTION_THREADS: usize = 64;

/// More build threads than this only contend for the disk and the cores
/// the writers need.
pub const MAX_CHUNK_REBALANCE_THREADS: usize = 64;

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
        // Early cleaning resumes and releases by split storing.
        let mut forest = Profile::SizeTiered.options();
        forest.validate().unwrap();
        forest.set("early_cleaning_threshold", "10").unwrap();
        let e = forest.validate().unwrap_err();
        assert!(e.to_string().contains("tiered_split_storing"), "{e}");
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

    /// A profile sets only options its layout reads: an option declared
    /// for the other layout would be one it ignores.
    #[test]
    fn each_profile_sets_only_options_its_layout_reads() {
        let default = Options::default();
        for &p in Profile::ALL {
            let o = p.options();
            for name in differences(&default, &o) {
                assert!(
                    Options::is_read_by(name, o.layout),
                    "profile {p} sets {name}, which layout {} does not read",
                    o.layout
                );
            }
        }
        assert!(!Options::is_read_by("no_such_option", Layout::Lsm));
    }

    #[test]
    fn durability_async_needs_the_chunked_layout() {
        let mut lsm = Options::default();
        lsm.set("durability", "async").unwrap();
        let err = lsm.validate().unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert!(
            err.to_string()
                .contains("durability=async needs layout=chunked"),
            "{err}"
        );
        let mut chunked = Profile::YoDb.options();
        chunked.set("durability", "async").unwrap();
        chunked.validate().unwrap();
        // Chunked-only options the LSM merely ignores are accepted.
        lsm.set("durability", "sync").unwrap();
        lsm.set("chunk_size", "8192").unwrap();
        lsm.validate().unwrap();
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

    /// A flush placed below L0 would bring data into a level past its
    /// compaction buffer, whose older runs could then answer a lookup with
    /// a stale version; dynamic level sizing compacts L0 into the base
    /// level, whose buffer receives L0's tables, and is accepted.
    #[test]
    fn lsbm_buffer_refuses_arrivals_that_bypass_a_level_buffer() {
        let lsbm = Profile::Lsbm.options();
        for dynamic in ["false", "true"] {
            let mut o = lsbm.clone();
            o.set("dynamic_level_bytes", dynamic).unwrap();
            o.validate().unwrap();
            o.set("max_mem_compact_level", "2").unwrap();
            let err = o.validate().unwrap_err();
            let msg = err.to_string();
            assert!(
                matches!(err, Error::InvalidArgument(_)) && msg.contains("max_mem_compact_level"),
                "dynamic_level_bytes={dynamic}: {msg}"
            );
        }
        let mut plain = lsbm;
        plain.set("dynamic_level_bytes", "false").unwrap();
        plain.set("max_mem_compact_level", "2").unwrap();
        plain.set("lsbm_buffer", "false").unwrap();
        plain.validate().unwrap();
    }

    #[test]
    fn lsbm_level_base_is_ten_memtables_unless_set_in_bytes() {
        let lsbm = Profile::Lsbm.options().write_buffer_size(1 << 20);
        assert_eq!(lsbm.level_base_bytes(), 10 << 20);
        let fixed = lsbm
            .level_base_write_buffers(0)
            .max_bytes_for_level_base(3 << 20);
        assert_eq!(fixed.level_base_bytes(), 3 << 20);
        assert_eq!(Profile::LevelDb.options().level_base_bytes(), 10 << 20);
    }

    #[test]
    fn the_base_level_follows_small_memtables_up_to_the_configured_ceiling() {
        let mib = 1 << 20;
        let default = Options::default();
        assert!(default.level_sizing_from_memtable && default.dynamic_level_bytes);
        for (memtable, base) in [(1, 10), (4, 40), (16, 160), (64, 256), (256, 256)] {
            let o = default.clone().write_buffer_size(memtable * mib);
            assert_eq!(o.level_base_bytes(), base * mib, "{memtable} MiB memtables");
            let off = o.level_sizing_from_memtable(false);
            assert_eq!(off.level_base_bytes(), 256 * mib, "switched off");
        }
        // An explicit count of memtables still wins.
        let o = default.write_buffer_size(mib).level_base_write_buffers(3);
        assert_eq!(o.level_base_bytes(), 3 * mib);
    }

    #[test]
    fn l0_stall_counts_rise_with_small_memtables_to_rocksdbs() {
        let mib = 1 << 20;
        let default = Options::default();
        assert_eq!(
            (
                default.l0_slowdown_writes_trigger,
                default.l0_stop_writes_trigger
            ),
            (8, 12)
        );
        // 256 MiB of L0 is 4 runs of 64 MiB (the counts stay), 16 of
        // 16 MiB, 64 of 4 MiB (capped at RocksDB's 20 and 36).
        for (memtable, counts) in [(64, (8, 12)), (32, (8, 12)), (16, (16, 28)), (4, (20, 36))] {
            let o = default.clone().write_buffer_size(memtable * mib);
            assert_eq!(o.l0_stall_triggers(), counts, "{memtable} MiB memtables");
            let off = o.level_sizing_from_memtable(false);
            assert_eq!(off.l0_stall_triggers(), (8, 12), "switched off");
        }
        // Configured counts above RocksDB's are kept; a stop count above
        // RocksDB's never falls below the raised slowdown count.
        let high = default.clone().write_buffer_size(mib);
        let high = high
            .l0_slowdown_writes_trigger(30)
            .l0_stop_writes_trigger(40);
        assert_eq!(high.l0_stall_triggers(), (30, 40));
        let wide = default.write_buffer_size(mib).l0_stop_writes_trigger(50);
        let (slow, stop) = wide.l0_stall_triggers();
        assert!(slow == 20 && stop >= 50, "{slow} {stop}");
    }

    #[test]
    fn profiles_round_trip_and_validate() {
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
    }

    /// The fields in which `b` differs from `a`, besides the profile.
    fn differences(a: &Options, b: &Options) -> Vec<&'static str> {
        a.fields()
            .into_iter()
            .zip(b.fields())
            .filter(|((name, x), (_, y))| *name != "profile" && x != y)
            .map(|((name, _), _)| name)
            .collect()
    }

    #[test]
    fn paper_profiles_are_their_baseline_plus_their_techniques_only() {
        let leveldb = Profile::LevelDb.options();
        let bolt = Profile::Bolt.options();
        let sifr = Profile::Sifr.options();
        let bolt_techniques = [
            "target_table_size",
            "compaction_file",
            "group_compaction_bytes",
            "group_compaction_level_share",
            "settled_compaction",
            "segment_descriptor_cache",
        ];
        let size_tiered = Profile::SizeTiered.options();
        let sifr_techniques = ["compaction_policy", "flush_one_table", "search_threads"];
        // Size-Tiered is the forest alone; SifrDB adds split storing (with
        // flushes split too), early cleaning and parallel search to it.
        let forest = [
            "compaction_policy",
            "tiered_split_storing",
            "early_cleaning_threshold",
        ];
        let split_forest = [
            "tiered_split_storing",
            "early_cleaning_threshold",
            "flush_one_table",
            "search_threads",
        ];
        for (base, profile, techniques) in [
            (&leveldb, &bolt, &bolt_techniques[..]),
            (&leveldb, &sifr, &sifr_techniques[..]),
            (&leveldb, &size_tiered, &forest[..]),
            (&size_tiered, &sifr, &split_forest[..]),
            (
                &sifr,
                &Profile::SifrBolt.options(),
                &["compaction_file", "segment_descriptor_cache"][..],
            ),
        ] {
            assert_eq!(
                differences(base, profile),
                techniques,
                "{} against {}",
                profile.profile,
                base.profile
            );
        }
        // Techniques on by default in the engine are on in the profiles
        // whose paper has them, though they are equal to `leveldb`'s.
        assert!(sifr.runs_per_level >= 2 && sifr.early_cleaning_threshold > 0);
        assert_eq!(
            (leveldb.compaction_threads, bolt.compaction_threads),
            (1, 1)
        );
        assert!(leveldb.write_buffer_size == 64 << 20 && !leveldb.dynamic_level_bytes);
    }
}
