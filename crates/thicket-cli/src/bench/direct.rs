//! `thicket bench direct`: the minimal loop the driver is checked against
//! (`thicket bench crosscheck`). It calls one engine's library directly and
//! shares none of the driver's machinery: no engine trait, operation
//! streams, worker threads, per-operation clock reads or counters, and no
//! RocksDB statistics. One thread, one clock read before and one after the
//! loop. Each engine's options are set here again, by hand, to what the
//! driver gives it, so a driver that configured an engine differently would
//! show up as a different ratio.
//!
//! Keys are 16 bytes (`k0000000` and the big-endian key id), values 100
//! bytes of pseudo-random data, no compression, 10 bloom bits per key,
//! writes without sync, the store in a fresh directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use clap::Args;
use serde::{Deserialize, Serialize};

pub const DIRECT_PREFIX: &str = "thicket-bench-direct ";
const KEY_SIZE: usize = 16;
const VALUE_SIZE: usize = 100;
const BLOOM_BITS: u32 = 10;
const VALUE_POOL: usize = 1 << 20;

#[derive(Debug, Clone, Args, Serialize, Deserialize)]
pub struct DirectArgs {
    /// thicket, rocksdb or fjall.
    #[arg(long)]
    pub engine: String,
    /// fillseq (N puts in key order), fillrandom (N puts in a random
    /// order) or readrandom (N puts in a random order, not timed, then M
    /// gets of uniform random keys).
    #[arg(long, value_parser = ["fillseq", "fillrandom", "readrandom"])]
    pub workload: String,
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub num: u64,
    #[command(flatten)]
    #[serde(flatten)]
    pub shape: StoreShape,
    /// readrandom: waits for background work after the puts (not timed).
    #[arg(long)]
    pub settle: bool,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// The gets and the store's memory and threads, alike in the direct loop
/// and in the cross-check that runs it.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
pub struct StoreShape {
    /// Gets of readrandom (default: N).
    #[arg(long, value_name = "M")]
    pub ops: Option<u64>,
    #[arg(long, value_name = "C", default_value_t = 64)]
    pub cache_mb: u64,
    #[arg(long, value_name = "W", default_value_t = 64)]
    pub write_buffer_mb: u64,
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub background_threads: usize,
}

/// What one direct run measured (the timed loop only).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DirectResult {
    pub engine: String,
    pub workload: String,
    pub ops: u64,
    pub seconds: f64,
    pub ops_per_sec: f64,
}

/// splitmix64: the loop's own random source.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn below(state: &mut u64, n: u64) -> u64 {
    ((u128::from(next_random(state)) * u128::from(n)) >> 64) as u64
}

fn key(id: u64) -> [u8; KEY_SIZE] {
    let mut k = *b"k0000000\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&id.to_be_bytes());
    k
}

/// The keys in the order they are put, and the bytes values are cut from.
struct Data {
    order: Vec<u64>,
    pool: Vec<u8>,
}

impl Data {
    /// Keys in ascending order when `sequential`, else shuffled.
    fn new(num: u64, seed: u64, sequential: bool) -> Data {
        let mut state = seed;
        let mut order: Vec<u64> = (0..num).collect();
        if !sequential {
            for i in (1..order.len()).rev() {
                let j = below(&mut state, i as u64 + 1) as usize;
                order.swap(i, j);
            }
        }
        let pool = (0..VALUE_POOL + VALUE_SIZE)
            .map(|_| next_random(&mut state) as u8)
            .collect();
        Data { order, pool }
    }

    fn value(&self, id: u64) -> &[u8] {
        let at = (id.wrapping_mul(2_654_435_761) % VALUE_POOL as u64) as usize;
        &self.pool[at..at + VALUE_SIZE]
    }
}

/// Puts every key in `data`'s order; the loop's seconds.
fn fill(
    data: &Data,
    mut put: impl FnMut(&[u8], &[u8]) -> Result<(), String>,
) -> Result<f64, String> {
    let start = Instant::now();
    for &id in &data.order {
        put(&key(id), data.value(id))?;
    }
    Ok(start.elapsed().as_secs_f64())
}

/// `ops` gets of uniform random keys among `num`, each of which must be
/// found; the loop's seconds.
fn read(
    num: u64,
    ops: u64,
    seed: u64,
    mut get: impl FnMut(&[u8]) -> Result<bool, String>,
) -> Result<f64, String> {
    let mut state = seed ^ 0x5eed;
    let mut missing = 0u64;
    let start = Instant::now();
    for _ in 0..ops {
        if !get(&key(below(&mut state, num)))? {
            missing += 1;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    if missing > 0 {
        return Err(format!("{missing} of {ops} gets found nothing"));
    }
    Ok(seconds)
}

/// The timed loop of `a` on one engine's put, get and settle.
fn run_loop(
    a: &DirectArgs,
    dir: &Path,
    put: impl FnMut(&[u8], &[u8]) -> Result<(), String>,
    get: impl FnMut(&[u8]) -> Result<bool, String>,
    settle: impl FnOnce() -> Result<(), String>,
) -> Result<(u64, f64), String> {
    let data = Data::new(a.num, a.seed, a.workload == "fillseq");
    if a.workload != "readrandom" {
        return Ok((a.num, fill(&data, put)?));
    }
    fill(&data, put)?;
    drop(data);
    if a.settle {
        settle()?;
        super::procfs::write_back(dir)?;
    }
    let ops = a.shape.ops.unwrap_or(a.num);
    Ok((ops, read(a.num, ops, a.seed, get)?))
}

fn thicket(a: &DirectArgs, dir: &Path) -> Result<(u64, f64), String> {
    use thicketdb::{Db, Profile};
    let e = |e: thicketdb::Error| e.to_string();
    let mut o = Profile::Default.options();
    o.write_buffer_size = a.shape.write_buffer_mb << 20;
    o.block_cache_size = a.shape.cache_mb << 20;
    o.bloom_bits_per_key = BLOOM_BITS;
    o.compression = thicketdb::CompressionType::None;
    // ThicketDB's flush thread is one of the background threads.
    o.compaction_threads = a.shape.background_threads.saturating_sub(1).max(1);
    let db = Db::open(dir, o).map_err(e)?;
    let measured = run_loop(
        a,
        dir,
        |k, v| db.put(k, v).map_err(e),
        |k| Ok(db.get(k).map_err(e)?.is_some()),
        || db.wait_for_compactions().map_err(e),
    )?;
    db.close().map_err(e)?;
    Ok(measured)
}

#[cfg(feature = "peers")]
fn rocksdb(a: &DirectArgs, dir: &Path) -> Result<(u64, f64), String> {
    let e = |e: rocksdb::Error| e.to_string();
    let mut o = rocksdb::Options::default();
    o.create_if_missing(true);
    o.set_write_buffer_size((a.shape.write_buffer_mb << 20) as usize);
    o.set_max_background_jobs(a.shape.background_threads as i32);
    o.set_compression_type(rocksdb::DBCompressionType::None);
    let mut table = rocksdb::BlockBasedOptions::default();
    table.set_block_cache(&rocksdb::Cache::new_lru_cache(
        (a.shape.cache_mb << 20) as usize,
    ));
    table.set_bloom_filter(f64::from(BLOOM_BITS), false);
    o.set_block_based_table_factory(&table);
    let db = rocksdb::DB::open(&o, dir).map_err(e)?;
    run_loop(
        a,
        dir,
        |k, v| db.put(k, v).map_err(e),
        |k| Ok(db.get_pinned(k).map_err(e)?.is_some()),
        || {
            db.wait_for_compact(&rocksdb::WaitForCompactOptions::default())
                .map_err(e)
        },
    )
}

#[cfg(feature = "peers")]
fn fjall(a: &DirectArgs, dir: &Path) -> Result<(u64, f64), String> {
    use fjall::config::{
        BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry,
    };
    let e = |e: fjall::Error| e.to_string();
    let db = fjall::Database::builder(dir)
        .cache_size(a.shape.cache_mb << 20)
        .worker_threads(a.shape.background_threads.max(1))
        .open()
        .map_err(e)?;
    let memtable = a.shape.write_buffer_mb << 20;
    let ks = db
        .keyspace("bench", move || {
            fjall::KeyspaceCreateOptions::default()
                .max_memtable_size(memtable)
                .data_block_compression_policy(CompressionPolicy::all(fjall::CompressionType::None))
                .filter_policy(FilterPolicy::all(FilterPolicyEntry::Bloom(
                    BloomConstructionPolicy::BitsPerKey(BLOOM_BITS as f32),
                )))
        })
        .map_err(e)?;
    let measured = run_loop(
        a,
        dir,
        |k, v| ks.insert(k, v).map_err(e),
        |k| Ok(ks.get(k).map_err(e)?.is_some()),
        || super::peers::fjall_wait_for_compactions(&db, &ks),
    )?;
    db.persist(fjall::PersistMode::Buffer).map_err(e)?;
    Ok(measured)
}

/// Runs `a` in the (empty or new) directory `dir`, removing it afterwards.
pub fn run(a: &DirectArgs, dir: &Path) -> Result<DirectResult, String> {
    let occupied = std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some());
    if occupied {
        return Err(format!(
            "{}: the direct loop needs an empty directory",
            dir.display()
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let measured = match a.engine.as_str() {
        "thicket" => thicket(a, dir),
        #[cfg(feature = "peers")]
        "rocksdb" => rocksdb(a, dir),
        #[cfg(feature = "peers")]
        "fjall" => fjall(a, dir),
        other => Err(format!(
            "engine {other:?} is not available in this build (peers need --features peers)"
        )),
    };
    let removed = std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()));
    let (ops, seconds) = measured?;
    removed?;
    Ok(DirectResult {
        engine: a.engine.clone(),
        workload: a.workload.clone(),
        ops,
        seconds,
        ops_per_sec: ops as f64 / seconds.max(1e-9),
    })
}

/// `thicket bench direct`: runs and prints the result line.
pub fn serve(a: &DirectArgs, dir: &Path) -> Result<(), String> {
    let r = run(a, dir)?;
    let line = serde_json::to_string(&r).map_err(|e| e.to_string())?;
    println!("{DIRECT_PREFIX}{line}");
    Ok(())
}

/// Runs `a` in a child process of `exe` (a fresh process per run, as the
/// driver's runs get), in `dir`.
pub fn run_child(exe: &Path, a: &DirectArgs, dir: &PathBuf) -> Result<DirectResult, String> {
    let mut cmd = Command::new(exe);
    cmd.args(["bench", "direct", "--db"])
        .arg(dir)
        .args(["--engine", &a.engine, "--workload", &a.workload])
        .args(["--num", &a.num.to_string()])
        .args(["--cache-mb", &a.shape.cache_mb.to_string()])
        .args(["--write-buffer-mb", &a.shape.write_buffer_mb.to_string()])
        .args([
            "--background-threads",
            &a.shape.background_threads.to_string(),
        ])
        .args(["--seed", &a.seed.to_string()]);
    if let Some(ops) = a.shape.ops {
        cmd.args(["--ops", &ops.to_string()]);
    }
    if a.settle {
        cmd.arg("--settle");
    }
    let out = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("starting {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result = stdout
        .lines()
        .find_map(|l| l.strip_prefix(DIRECT_PREFIX))
        .map(serde_json::from_str::<DirectResult>);
    match result {
        Some(r) if out.status.success() => r.map_err(|e| format!("bad direct result: {e}")),
        _ => Err(format!(
            "direct {} {} failed ({})",
            a.engine, a.workload, out.status
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fill_order_is_a_permutation_and_reads_stay_in_range() {
        let d = Data::new(10_000, 7, false);
        let mut sorted = d.order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..10_000).collect::<Vec<_>>());
        assert_ne!(d.order, sorted, "shuffled");
        assert_eq!(Data::new(10_000, 7, true).order, sorted, "fillseq's order");
        let mut state = 1;
        assert!((0..10_000).all(|_| below(&mut state, 37) < 37));
        assert_eq!(&key(0x0102)[..], b"k0000000\0\0\0\0\0\0\x01\x02");
        assert_eq!(d.value(5).len(), VALUE_SIZE);
    }

    #[test]
    fn thicket_runs_every_loop_and_finds_every_key() {
        for workload in ["fillseq", "fillrandom", "readrandom"] {
            let dir = tempfile::tempdir().unwrap();
            let store = dir.path().join("s");
            let a = DirectArgs {
                engine: "thicket".into(),
                workload: workload.into(),
                num: 5000,
                shape: StoreShape {
                    ops: Some(2000),
                    cache_mb: 8,
                    write_buffer_mb: 1,
                    background_threads: 2,
                },
                settle: true,
                seed: 3,
            };
            let r = run(&a, &store).unwrap();
            let want = if workload == "readrandom" { 2000 } else { 5000 };
            assert_eq!(r.ops, want);
            assert!(r.ops_per_sec > 0.0);
            assert!(!store.exists(), "the store is removed");
        }
    }
}
