//! The peers: RocksDB (the `rocksdb` crate, bundled RocksDB) and fjall.
//! Each gets the same shared settings as ThicketDB; everything else stays
//! at the engine's defaults.

use std::time::{Duration, Instant};

use fjall::config::{BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry};
use std::sync::atomic::{AtomicU64, Ordering};

use rocksdb::perf::{set_perf_stats, PerfContext, PerfMetric, PerfStatsLevel};
use rocksdb::statistics::{StatsLevel, Ticker};

use super::args::Settings;
use super::engine::{Counters, Cursor, Engine, EngineResult};

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

pub struct Rocks {
    db: rocksdb::DB,
    /// Holds the statistics object the tickers are read from.
    opts: rocksdb::Options,
    write: rocksdb::WriteOptions,
    /// Gets, and the blocks they read (RocksDB's per-thread perf context).
    gets: AtomicU64,
    get_blocks_read: AtomicU64,
}

thread_local! {
    /// This thread's RocksDB perf context, counting (only) what it reads.
    static PERF: PerfContext = {
        set_perf_stats(PerfStatsLevel::EnableCount);
        PerfContext::default()
    };
}

impl Rocks {
    pub fn open(s: &Settings) -> EngineResult<Rocks> {
        Rocks::open_with(s, |o, path| rocksdb::DB::open(o, path))
    }

    pub fn open_read_only(s: &Settings) -> EngineResult<Rocks> {
        Rocks::open_with(s, |o, path| rocksdb::DB::open_for_read_only(o, path, false))
    }

    fn open_with(
        s: &Settings,
        open: impl FnOnce(&rocksdb::Options, &std::path::Path) -> Result<rocksdb::DB, rocksdb::Error>,
    ) -> EngineResult<Rocks> {
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        o.set_write_buffer_size(s.write_buffer_bytes as usize);
        o.set_max_background_jobs(s.background_threads as i32);
        o.set_compression_type(match s.compression.as_str() {
            "none" => rocksdb::DBCompressionType::None,
            "lz4" => rocksdb::DBCompressionType::Lz4,
            "zstd" => rocksdb::DBCompressionType::Zstd,
            c => return Err(format!("unknown compression {c:?}")),
        });
        // Tickers only: the byte, sync and block-cache counts are per-core
        // counters. The default level (ExceptDetailedTimers) also times every
        // operation into histograms, which ThicketDB's counters do not cost.
        o.enable_statistics();
        o.set_statistics_level(StatsLevel::ExceptHistogramOrTimers);
        let mut table = rocksdb::BlockBasedOptions::default();
        table.set_block_cache(&rocksdb::Cache::new_lru_cache(s.cache_bytes as usize));
        table.set_bloom_filter(f64::from(s.bloom_bits), false);
        o.set_block_based_table_factory(&table);
        let direct = super::engine::direct_io_applied(s);
        o.set_use_direct_reads(direct.reads);
        o.set_use_direct_io_for_flush_and_compaction(direct.flush_and_compaction_writes);
        if let Some(bytes) = s.level_base_bytes {
            o.set_max_bytes_for_level_base(bytes);
        }
        if let Some(bytes) = s.table_bytes {
            o.set_target_file_size_base(bytes);
        }
        let db = open(&o, s.db.as_ref()).map_err(err)?;
        let mut write = rocksdb::WriteOptions::default();
        write.set_sync(s.sync);
        Ok(Rocks {
            db,
            opts: o,
            write,
            gets: AtomicU64::new(0),
            get_blocks_read: AtomicU64::new(0),
        })
    }
}

struct RocksCursor<'a> {
    it: rocksdb::DBRawIterator<'a>,
    started: bool,
}

impl Cursor for RocksCursor<'_> {
    fn next_entry(&mut self) -> EngineResult<Option<usize>> {
        if self.started {
            self.it.next();
        } else {
            self.it.seek_to_first();
            self.started = true;
        }
        self.it.status().map_err(err)?;
        Ok(match (self.it.key(), self.it.value()) {
            (Some(k), Some(v)) => Some(k.len() + v.len()),
            _ => None,
        })
    }
}

impl Engine for Rocks {
    fn put(&self, key: &[u8], value: &[u8]) -> EngineResult<()> {
        self.db.put_opt(key, value, &self.write).map_err(err)
    }

    fn get(&self, key: &[u8]) -> EngineResult<Option<usize>> {
        let blocks = || PERF.with(|p| p.metric(PerfMetric::BlockReadCount));
        let before = blocks();
        let found = self.db.get_pinned(key).map_err(err)?.map(|v| v.len());
        self.gets.fetch_add(1, Ordering::Relaxed);
        self.get_blocks_read
            .fetch_add(blocks().saturating_sub(before), Ordering::Relaxed);
        Ok(found)
    }

    fn scan(&self, start: &[u8], count: usize) -> EngineResult<(usize, usize)> {
        let mut it = self.db.raw_iterator();
        it.seek(start);
        let (mut n, mut bytes) = (0, 0);
        while n < count {
            let (Some(k), Some(v)) = (it.key(), it.value()) else {
                break;
            };
            bytes += k.len() + v.len();
            n += 1;
            it.next();
        }
        it.status().map_err(err)?;
        Ok((n, bytes))
    }

    fn cursor(&self) -> EngineResult<Box<dyn Cursor + '_>> {
        Ok(Box::new(RocksCursor {
            it: self.db.raw_iterator(),
            started: false,
        }))
    }

    fn wait_for_compactions(&self) -> EngineResult<()> {
        // Flushes nothing: immutable memtables and every scheduled or
        // unscheduled compaction, as db_bench's `--use_existing_db` run sees.
        self.db
            .wait_for_compact(&rocksdb::WaitForCompactOptions::default())
            .map_err(err)
    }

    fn counters(&self) -> Counters {
        let t = |x| self.opts.get_ticker_count(x);
        Counters {
            bytes_written: Some(
                t(Ticker::WalFileBytes) + t(Ticker::FlushWriteBytes) + t(Ticker::CompactWriteBytes),
            ),
            fsyncs: Some(t(Ticker::WalFileSynced)),
            cache_hits: Some(t(Ticker::BlockCacheHit)),
            cache_misses: Some(t(Ticker::BlockCacheMiss)),
            gets: Some(self.gets.load(Ordering::Relaxed)),
            get_blocks_read: Some(self.get_blocks_read.load(Ordering::Relaxed)),
            flush_bytes: Some(t(Ticker::FlushWriteBytes)),
            compaction_bytes: Some(t(Ticker::CompactWriteBytes)),
            chunk_gets: None,
        }
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        drop(self);
        Ok(())
    }
}

pub struct Fjall {
    db: fjall::Database,
    ks: fjall::Keyspace,
    sync: bool,
}

impl Fjall {
    pub fn open(s: &Settings) -> EngineResult<Fjall> {
        let compression = match s.compression.as_str() {
            "none" => fjall::CompressionType::None,
            "lz4" => fjall::CompressionType::Lz4,
            c => return Err(format!("fjall does not support compression {c:?}")),
        };
        let db = fjall::Database::builder(&s.db)
            .cache_size(s.cache_bytes)
            .worker_threads(s.background_threads.max(1))
            .open()
            .map_err(err)?;
        let (wb, bits) = (s.write_buffer_bytes, s.bloom_bits as f32);
        let ks = db
            .keyspace("bench", move || {
                fjall::KeyspaceCreateOptions::default()
                    .max_memtable_size(wb)
                    .data_block_compression_policy(CompressionPolicy::all(compression))
                    .filter_policy(FilterPolicy::all(FilterPolicyEntry::Bloom(
                        BloomConstructionPolicy::BitsPerKey(bits),
                    )))
            })
            .map_err(err)?;
        Ok(Fjall {
            db,
            ks,
            sync: s.sync,
        })
    }
}

struct FjallCursor(fjall::Iter);

impl Cursor for FjallCursor {
    fn next_entry(&mut self) -> EngineResult<Option<usize>> {
        match self.0.next() {
            None => Ok(None),
            Some(g) => {
                let (k, v) = g.into_inner().map_err(err)?;
                Ok(Some(k.len() + v.len()))
            }
        }
    }
}

impl Engine for Fjall {
    fn put(&self, key: &[u8], value: &[u8]) -> EngineResult<()> {
        self.ks.insert(key, value).map_err(err)?;
        if self.sync {
            self.db.persist(fjall::PersistMode::SyncData).map_err(err)?;
        }
        Ok(())
    }

    fn get(&self, key: &[u8]) -> EngineResult<Option<usize>> {
        Ok(self.ks.get(key).map_err(err)?.map(|v| v.len()))
    }

    fn scan(&self, start: &[u8], count: usize) -> EngineResult<(usize, usize)> {
        let (mut n, mut bytes) = (0, 0);
        for g in self.ks.range(start..).take(count) {
            let (k, v) = g.into_inner().map_err(err)?;
            bytes += k.len() + v.len();
            n += 1;
        }
        Ok((n, bytes))
    }

    fn cursor(&self) -> EngineResult<Box<dyn Cursor + '_>> {
        Ok(Box::new(FjallCursor(self.ks.iter())))
    }

    fn wait_for_compactions(&self) -> EngineResult<()> {
        fjall_wait_for_compactions(&self.db, &self.ks)
    }

    /// fjall counts no bytes or syncs without its `metrics` feature, which
    /// this build leaves off (it adds atomic adds to every block load).
    fn counters(&self) -> Counters {
        Counters::default()
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        self.db.persist(fjall::PersistMode::Buffer).map_err(err)?;
        drop(self);
        Ok(())
    }
}

/// How long fjall must stay idle to count as settled.
const FJALL_QUIET: Duration = Duration::from_secs(1);
/// Give up on settling fjall after this long.
const FJALL_SETTLE_LIMIT: Duration = Duration::from_secs(1800);

/// Waits until fjall has no sealed memtable, no queued flush and no running
/// compaction, and has completed no compaction for `FJALL_QUIET`. fjall
/// exposes no estimate of pending compaction work, and it schedules
/// compactions only after flushes, so debt it leaves for the next flush
/// stays.
pub fn fjall_wait_for_compactions(db: &fjall::Database, ks: &fjall::Keyspace) -> EngineResult<()> {
    let start = Instant::now();
    let mut quiet_since = Instant::now();
    let mut completed = db.compactions_completed();
    loop {
        let busy = ks.sealed_memtable_count() > 0
            || db.outstanding_flushes() > 0
            || db.active_compactions() > 0;
        let now_completed = db.compactions_completed();
        if busy || now_completed != completed {
            completed = now_completed;
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= FJALL_QUIET {
            return Ok(());
        }
        if start.elapsed() > FJALL_SETTLE_LIMIT {
            return Err(format!(
                "fjall still compacting after {} s",
                FJALL_SETTLE_LIMIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
