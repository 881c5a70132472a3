//! The engines under test behind one small interface, and ThicketDB's side
//! of it. The peers live in `peers.rs` (feature `peers`).

use thicketdb::{Db, Options, Profile, ReadOptions, WriteOptions};

use super::args::{scoped_option, Settings};

pub type EngineResult<T> = Result<T, String>;

/// Cumulative engine-reported counters; `None` where the engine has none.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counters {
    /// Log, flush, compaction and metadata bytes the engine wrote.
    pub bytes_written: Option<u64>,
    pub fsyncs: Option<u64>,
    pub cache_hits: Option<u64>,
    pub cache_misses: Option<u64>,
    /// Point lookups, and the blocks they read from files (for TRIAD's
    /// read amplification).
    pub gets: Option<u64>,
    pub get_blocks_read: Option<u64>,
    /// Bytes written by flushes and by compactions.
    pub flush_bytes: Option<u64>,
    pub compaction_bytes: Option<u64>,
    /// Where the chunked layout served its gets (ThicketDB only; all zero
    /// for its LSM layout).
    pub chunk_gets: Option<ChunkGets>,
}

/// Gets of ThicketDB's chunked layout by the component that answered them
/// (the stats' `chunk_gets_from_*`; YoDB's Figure 4a).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkGets {
    pub munk: u64,
    pub row_cache: u64,
    pub log: u64,
    pub table: u64,
}

impl ChunkGets {
    /// The gets between `earlier` and `self`.
    pub fn since(self, earlier: ChunkGets) -> ChunkGets {
        ChunkGets {
            munk: self.munk.saturating_sub(earlier.munk),
            row_cache: self.row_cache.saturating_sub(earlier.row_cache),
            log: self.log.saturating_sub(earlier.log),
            table: self.table.saturating_sub(earlier.table),
        }
    }

    pub fn total(self) -> u64 {
        self.munk + self.row_cache + self.log + self.table
    }
}

/// A sequential reader (readseq).
pub trait Cursor {
    /// Reads the next entry: its key plus value length, `None` at the end.
    fn next_entry(&mut self) -> EngineResult<Option<usize>>;
}

pub trait Engine: Sync {
    fn put(&self, key: &[u8], value: &[u8]) -> EngineResult<()>;
    /// The value's length, or `None` when the key is absent.
    fn get(&self, key: &[u8]) -> EngineResult<Option<usize>>;
    /// Reads up to `count` entries from `start` on; returns (entries, bytes).
    fn scan(&self, start: &[u8], count: usize) -> EngineResult<(usize, usize)>;
    fn cursor(&self) -> EngineResult<Box<dyn Cursor + '_>>;
    /// Blocks until no flush or compaction is pending or running (`--settle`).
    fn wait_for_compactions(&self) -> EngineResult<()>;
    /// Read at the start and the end of the measured phase, never per
    /// operation.
    fn counters(&self) -> Counters;
    /// The statistics the engine keeps without a scan of the store, as
    /// JSON (ThicketDB: `thicket stats --json` less the space figures),
    /// read once per second of the measured phase (the runs'
    /// `mechanism_timeline`) and at its end; `None` where it keeps none
    /// worth recording.
    fn live_stats(&self) -> Option<serde_json::Value> {
        None
    }
    /// The figures that cost a scan of the store (ThicketDB: `thicket
    /// stats --json`'s space figures), read from a read-only reopen after
    /// the run; `None` where the engine reports none.
    fn space_stats(&self) -> Option<serde_json::Value> {
        None
    }
    fn close(self: Box<Self>) -> EngineResult<()>;
}

/// Engines this binary can drive.
pub fn available() -> &'static [&'static str] {
    if cfg!(feature = "peers") {
        &["thicket", "rocksdb", "fjall"]
    } else {
        &["thicket"]
    }
}

/// The settings' store opened read-only (fjall, which has no such mode,
/// opens read-write), for the scans after a run: live keys and space.
pub fn open_read_only(s: &Settings) -> EngineResult<Box<dyn Engine>> {
    match s.engine.as_str() {
        "thicket" => Ok(Box::new(Thicket::open_read_only(s)?)),
        #[cfg(feature = "peers")]
        "rocksdb" => Ok(Box::new(super::peers::Rocks::open_read_only(s)?)),
        _ => open(s),
    }
}

pub fn open(s: &Settings) -> EngineResult<Box<dyn Engine>> {
    match s.engine.as_str() {
        "thicket" => Ok(Box::new(Thicket::open(s)?)),
        #[cfg(feature = "peers")]
        "rocksdb" => Ok(Box::new(super::peers::Rocks::open(s)?)),
        #[cfg(feature = "peers")]
        "fjall" => Ok(Box::new(super::peers::Fjall::open(s)?)),
        #[cfg(not(feature = "peers"))]
        "rocksdb" | "fjall" => Err(format!(
            "engine {} needs a build with `--features peers`",
            s.engine
        )),
        other => Err(format!(
            "unknown engine {other:?} (available: {})",
            available().join(", ")
        )),
    }
}

/// What `--direct-reads` and `--direct-io` give each engine: ThicketDB and
/// RocksDB read with `O_DIRECT`; with `--direct-io` both also write the
/// tables of flushes and compactions with it (ThicketDB's LSM layout; the
/// chunked layout's funks are written buffered); fjall has neither.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DirectIo {
    pub reads: bool,
    pub flush_and_compaction_writes: bool,
}

pub fn direct_io_applied(s: &Settings) -> DirectIo {
    let asked = s.direct_reads || s.direct_io;
    match s.engine.as_str() {
        "thicket" => {
            let lsm = s
                .profile
                .as_deref()
                .unwrap_or("default")
                .parse::<Profile>()
                .is_ok_and(|p| p.options().layout == thicketdb::Layout::Lsm);
            DirectIo {
                reads: asked,
                flush_and_compaction_writes: s.direct_io && lsm,
            }
        }
        "rocksdb" => DirectIo {
            reads: asked,
            flush_and_compaction_writes: s.direct_io,
        },
        _ => DirectIo::default(),
    }
}

/// The ThicketDB options a run uses: the profile's, with the shared
/// settings applied.
pub fn thicket_options(s: &Settings) -> EngineResult<Options> {
    let profile: Profile = s
        .profile
        .as_deref()
        .unwrap_or("default")
        .parse()
        .map_err(|e| format!("{e}"))?;
    let mut o = profile.options();
    o.write_buffer_size = s.write_buffer_bytes;
    o.block_cache_size = s.cache_bytes;
    o.bloom_bits_per_key = s.bloom_bits;
    // One of the background threads is ThicketDB's flush thread.
    o.compaction_threads = s.background_threads.saturating_sub(1).max(1);
    // The chunked layout has no flush: all of them build funks (0: the
    // writers build them).
    if o.layout == thicketdb::Layout::Chunked {
        o.chunk_rebalance_threads = s.background_threads;
    }
    o.search_threads = s.search_threads;
    let direct = direct_io_applied(s);
    o.use_direct_reads = direct.reads;
    o.use_direct_io_for_flush_and_compaction = direct.flush_and_compaction_writes;
    o.compression = s.compression.parse().map_err(|e| format!("{e}"))?;
    if let Some(bytes) = s.level_base_bytes {
        o.max_bytes_for_level_base = bytes;
        // An explicit L1 target replaces one derived from the memtable,
        // and the L0 counts derived with it.
        o.level_base_write_buffers = 0;
        o.level_sizing_from_memtable = false;
    }
    if let Some(bytes) = s.table_bytes {
        o.target_table_size = bytes;
    }
    let run_profile = profile.name();
    for option in &s.thicket_options {
        let option = match scoped_option(option) {
            Some((scope, _)) if scope != run_profile => continue,
            Some((_, option)) => option,
            None => option.as_str(),
        };
        let (name, value) = option
            .split_once('=')
            .ok_or_else(|| format!("--thicket-option {option:?} is not NAME=VALUE"))?;
        o.set(name, value).map_err(|e| e.to_string())?;
    }
    o.validate().map_err(|e| e.to_string())?;
    Ok(o)
}

struct Thicket {
    db: Db,
    write: WriteOptions,
}

impl Thicket {
    fn open(s: &Settings) -> EngineResult<Thicket> {
        let db = Db::open(&s.db, thicket_options(s)?).map_err(|e| e.to_string())?;
        Ok(Thicket {
            db,
            write: WriteOptions { sync: s.sync },
        })
    }

    fn open_read_only(s: &Settings) -> EngineResult<Thicket> {
        let db = Db::open_read_only(&s.db, thicket_options(s)?).map_err(|e| e.to_string())?;
        Ok(Thicket {
            db,
            write: WriteOptions { sync: s.sync },
        })
    }
}

struct ThicketCursor {
    iter: thicketdb::DbIterator,
    started: bool,
}

impl Cursor for ThicketCursor {
    fn next_entry(&mut self) -> EngineResult<Option<usize>> {
        if self.started {
            self.iter.next();
        } else {
            self.iter.seek_to_first();
            self.started = true;
        }
        self.iter.status().map_err(|e| e.to_string())?;
        Ok(self
            .iter
            .valid()
            .then(|| self.iter.key().len() + self.iter.value().len()))
    }
}

impl Engine for Thicket {
    fn put(&self, key: &[u8], value: &[u8]) -> EngineResult<()> {
        self.db
            .put_opt(key, value, self.write)
            .map_err(|e| e.to_string())
    }

    fn get(&self, key: &[u8]) -> EngineResult<Option<usize>> {
        Ok(self
            .db
            .get(key)
            .map_err(|e| e.to_string())?
            .map(|v| v.len()))
    }

    fn scan(&self, start: &[u8], count: usize) -> EngineResult<(usize, usize)> {
        let mut it = self
            .db
            .iter(ReadOptions::default())
            .map_err(|e| e.to_string())?;
        it.seek(start);
        let (mut n, mut bytes) = (0, 0);
        while n < count && it.valid() {
            bytes += it.key().len() + it.value().len();
            n += 1;
            it.next();
        }
        it.status().map_err(|e| e.to_string())?;
        Ok((n, bytes))
    }

    fn cursor(&self) -> EngineResult<Box<dyn Cursor + '_>> {
        Ok(Box::new(ThicketCursor {
            iter: self
                .db
                .iter(ReadOptions::default())
                .map_err(|e| e.to_string())?,
            started: false,
        }))
    }

    fn wait_for_compactions(&self) -> EngineResult<()> {
        self.db.wait_for_compactions().map_err(|e| e.to_string())
    }

    fn counters(&self) -> Counters {
        // Counters the engine keeps anyway (relaxed atomic adds per write
        // group, flush, compaction and block lookup), read here in one call.
        let st = self.db.stats();
        Counters {
            bytes_written: Some(st.engine_bytes_written),
            fsyncs: Some(st.fsyncs),
            cache_hits: Some(st.block_cache_hits),
            cache_misses: Some(st.block_cache_misses),
            gets: Some(st.gets),
            get_blocks_read: Some(st.get_blocks_read),
            flush_bytes: Some(st.flush_bytes_written),
            compaction_bytes: Some(st.compaction_bytes_written),
            chunk_gets: Some(ChunkGets {
                munk: st.chunk_gets_from_munk,
                row_cache: st.chunk_gets_from_row_cache,
                log: st.chunk_gets_from_log,
                table: st.chunk_gets_from_table,
            }),
        }
    }

    fn space_stats(&self) -> Option<serde_json::Value> {
        let space = self.db.space_usage().ok()?;
        Some(crate::stats_json::space_to_json(&space))
    }

    fn live_stats(&self) -> Option<serde_json::Value> {
        Some(crate::stats_json::stats_to_json(&self.db.stats()))
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        self.db.close().map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(profile: &str, background_threads: usize, options: &[&str]) -> Settings {
        serde_json::from_value(serde_json::json!({
            "engine": "thicket", "profile": profile, "workload": "fillrandom",
            "db": "/tmp/unused", "num": 1, "ops": 1,
            "key_size": 16, "value_size": 100, "threads": 1, "duration_secs": null,
            "cache_bytes": 1 << 20, "write_buffer_bytes": 1 << 20, "compression": "none",
            "sync": false, "bloom_bits": 10, "background_threads": background_threads,
            "read_ratio": 0.5, "scan_length": null, "hot_fraction": 0.15, "seed": 42,
            "thicket_options": options,
        }))
        .unwrap()
    }

    #[test]
    fn background_threads_are_the_chunked_layouts_build_threads() {
        let threads = |profile, n, options: &[&str]| {
            let o = thicket_options(&settings(profile, n, options)).unwrap();
            (o.compaction_threads, o.chunk_rebalance_threads)
        };
        let lsm_builds = Options::default().chunk_rebalance_threads;
        assert_eq!(threads("default", 3, &[]), (2, lsm_builds));
        assert_eq!(threads("yodb", 3, &[]).1, 3);
        assert_eq!(threads("yodb", 0, &[]).1, 0);
        // An explicit option still wins.
        assert_eq!(threads("yodb", 3, &["chunk_rebalance_threads=1"]).1, 1);
    }

    /// `--level-base-mb` is taken as given: no ceiling derived from the
    /// memtable, no L0 counts raised (the LSbM reproduction's shape).
    #[test]
    fn an_explicit_level_base_turns_off_memtable_derived_sizing() {
        let derived = thicket_options(&settings("default", 2, &[])).unwrap();
        assert!(derived.level_sizing_from_memtable);
        assert_eq!(derived.level_base_bytes(), 10 << 20, "ten 1 MiB memtables");
        let mut s = settings("default", 2, &[]);
        s.level_base_bytes = Some(64 << 20);
        let explicit = thicket_options(&s).unwrap();
        assert!(!explicit.level_sizing_from_memtable);
        assert_eq!(explicit.level_base_bytes(), 64 << 20);
        assert_eq!(explicit.l0_stall_triggers(), (8, 12));
    }
}
