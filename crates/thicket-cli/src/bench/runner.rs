//! One engine running one workload, inside the child process: prefill,
//! optional settling, measured phase (threads, HDR histograms of the timed
//! operations, per-second timeline), then the process's own I/O and memory
//! counters.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::args::Settings;
use super::engine::{self, Counters, Cursor, Engine};
use super::generators::Rng;
use super::latency::{LatencyMode, Sampler};
use super::procfs;
use super::report::{cdf, ChunkGetShares, Latency, RunResult};
use super::workload::{
    prefill_count, prefill_order, prefill_streams, KeySpace, Op, OpStream, Params, Shared, OP_KINDS,
};

/// Runs longer than this get a progress bar (on a terminal).
const PROGRESS_AFTER: Duration = Duration::from_secs(3);
/// Highest latency the histograms hold: one minute, in nanoseconds.
const MAX_LATENCY_NS: u64 = 60_000_000_000;
const VALUE_POOL: usize = 1 << 20;
/// Threads add their completed operations to the shared count in batches
/// of this many, so the count's cache line is not written per operation.
const PUBLISH_EVERY: u64 = 64;

fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid histogram bounds")
}

/// What one thread measured.
struct ThreadStats {
    /// Latencies of the timed operations, per kind.
    hist: Vec<Histogram<u64>>,
    /// Completed operations per kind, timed or not.
    counts: Vec<u64>,
    found: u64,
    not_found: u64,
    entries: u64,
    user_bytes: u64,
    bytes: u64,
}

impl ThreadStats {
    fn new() -> ThreadStats {
        ThreadStats {
            hist: vec![latency_histogram(); OP_KINDS.len()],
            counts: vec![0; OP_KINDS.len()],
            found: 0,
            not_found: 0,
            entries: 0,
            user_bytes: 0,
            bytes: 0,
        }
    }

    fn merge(&mut self, o: &ThreadStats) {
        for (a, b) in self.hist.iter_mut().zip(&o.hist) {
            a.add(b).expect("same histogram bounds");
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.found += o.found;
        self.not_found += o.not_found;
        self.entries += o.entries;
        self.user_bytes += o.user_bytes;
        self.bytes += o.bytes;
    }
}

/// What a thread needs to turn operations into engine calls.
struct Worker<'a> {
    engine: &'a dyn Engine,
    space: &'a KeySpace,
    shared: &'a Shared,
    key: Vec<u8>,
    pool: Vec<u8>,
    cursor: Option<Box<dyn Cursor + 'a>>,
    stats: ThreadStats,
}

impl<'a> Worker<'a> {
    fn new(ctx: &PhaseContext<'a>, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let pool = (0..VALUE_POOL + 4096)
            .map(|_| rng.next_u64() as u8)
            .collect();
        Worker {
            engine: ctx.engine,
            space: ctx.space,
            shared: ctx.shared,
            key: Vec::with_capacity(ctx.space.key_size),
            pool,
            cursor: None,
            stats: ThreadStats::new(),
        }
    }

    fn put(&mut self, k: u64) -> Result<(), String> {
        self.space.key_into(&mut self.key, k);
        let len = self.space.value_len(k);
        let at = (k.wrapping_mul(2_654_435_761) % VALUE_POOL as u64) as usize;
        self.engine.put(&self.key, &self.pool[at..at + len])?;
        let n = (self.key.len() + len) as u64;
        self.stats.user_bytes += n;
        self.stats.bytes += n;
        Ok(())
    }

    fn get(&mut self, k: u64) -> Result<(), String> {
        self.space.key_into(&mut self.key, k);
        match self.engine.get(&self.key)? {
            Some(len) => {
                self.stats.found += 1;
                self.stats.bytes += (self.key.len() + len) as u64;
            }
            None => self.stats.not_found += 1,
        }
        Ok(())
    }

    /// Performs `op`; `false` when a sequential read reached the end.
    fn run(&mut self, op: Op) -> Result<bool, String> {
        match op {
            Op::Get(k) => self.get(k)?,
            Op::Put(k) => self.put(k)?,
            Op::Insert(k) => {
                self.put(k)?;
                self.shared.acked.fetch_add(1, Ordering::AcqRel);
            }
            Op::Rmw(k) => {
                self.get(k)?;
                self.put(k)?;
            }
            Op::Scan(k, len) => {
                self.space.key_into(&mut self.key, k);
                let (n, bytes) = self.engine.scan(&self.key, len)?;
                self.stats.entries += n as u64;
                self.stats.bytes += bytes as u64;
            }
            Op::Next => {
                if self.cursor.is_none() {
                    self.cursor = Some(self.engine.cursor()?);
                }
                let cursor = self.cursor.as_mut().expect("cursor just opened");
                match cursor.next_entry()? {
                    Some(bytes) => {
                        self.stats.entries += 1;
                        self.stats.bytes += bytes as u64;
                    }
                    None => return Ok(false),
                }
            }
        }
        Ok(true)
    }

    /// Performs `op`, timing it when `timed`; `false` as for `run`.
    fn step(&mut self, op: Op, timed: bool) -> Result<bool, String> {
        if !timed {
            let more = self.run(op)?;
            if more {
                self.stats.counts[op.kind()] += 1;
            }
            return Ok(more);
        }
        let t0 = Instant::now();
        let more = self.run(op)?;
        let ns = t0.elapsed().as_nanos() as u64;
        if more {
            self.stats.hist[op.kind()].saturating_record(ns.max(1));
            self.stats.counts[op.kind()] += 1;
        }
        Ok(more)
    }
}

/// What every thread of a phase shares.
struct PhaseContext<'a> {
    engine: &'a dyn Engine,
    /// The store's directory, whose size the phase samples.
    db: &'a Path,
    space: &'a KeySpace,
    shared: &'a Shared,
    latency: LatencyMode,
    seed: u64,
}

/// One phase: the operation streams (one per thread) and when it ends.
struct PhasePlan {
    label: String,
    streams: Vec<OpStream>,
    /// An extra stream that runs until the others are done
    /// (readwhilewriting's writer, rangehot's with `--write-rate`), and its
    /// pace in operations per second (`None`: unpaced).
    writer: Option<(OpStream, Option<f64>)>,
    /// Each of `streams`' pace in operations per second (`None`: unpaced).
    reader_pace: Option<f64>,
    deadline: Option<Duration>,
    /// Operations expected, for the progress bar.
    total: u64,
}

/// The counters the threads and the watcher of a phase share.
struct PhaseSignals {
    done: AtomicU64,
    /// Operations of the threads other than the writer.
    readers_done: AtomicU64,
    stop: AtomicBool,
    running: AtomicUsize,
}

/// The outcome of one phase.
struct Phase {
    stats: ThreadStats,
    seconds: f64,
    timeline: Vec<u64>,
    /// With a writer: the other threads' operations per second.
    reader_timeline: Vec<u64>,
    hit_ratio_timeline: Vec<Option<f64>>,
    mechanism_timeline: BTreeMap<String, Vec<serde_json::Value>>,
    /// The largest size of the store sampled while the phase ran.
    peak_space_bytes: u64,
}

/// How often a phase samples the store's size for `peak_space_bytes`.
const SPACE_SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// How one thread runs: a reader or the writer, each at an optional pace.
#[derive(Clone, Copy)]
enum Role {
    Reader(Option<f64>),
    Writer(Option<f64>),
}

impl Role {
    fn pace(self) -> Option<f64> {
        match self {
            Role::Reader(pace) | Role::Writer(pace) => pace,
        }
    }
}

/// One thread's loop: operations from `stream` until it ends or the phase
/// stops. A paced thread sleeps until each operation's turn (operation i
/// at `i / rate` seconds), so it never runs ahead of its rate.
fn drive(
    ctx: &PhaseContext<'_>,
    signals: &PhaseSignals,
    mut stream: OpStream,
    thread: usize,
    role: Role,
) -> Result<ThreadStats, String> {
    let mut w = Worker::new(ctx, ctx.seed ^ (thread as u64 + 1) << 32);
    let mut sampler = Sampler::new(ctx.latency);
    let mut unpublished = 0;
    let publish = |n: u64| {
        signals.done.fetch_add(n, Ordering::Relaxed);
        if matches!(role, Role::Reader(_)) {
            signals.readers_done.fetch_add(n, Ordering::Relaxed);
        }
    };
    let start = Instant::now();
    let mut issued = 0u64;
    let result = (|| {
        while !signals.stop.load(Ordering::Relaxed) {
            if let Some(rate) = role.pace() {
                let due = Duration::from_secs_f64(issued as f64 / rate);
                if let Some(wait) = due.checked_sub(start.elapsed()) {
                    std::thread::sleep(wait.min(Duration::from_millis(50)));
                    continue;
                }
            }
            let Some(op) = stream.next(ctx.shared) else {
                break;
            };
            issued += 1;
            if !w.step(op, sampler.time_next())? {
                break;
            }
            unpublished += 1;
            if unpublished == PUBLISH_EVERY {
                publish(unpublished);
                unpublished = 0;
            }
        }
        Ok(())
    })();
    publish(unpublished);
    result.map(|()| w.stats)
}

/// The block-cache hit ratio of each second, from the engine's counters.
struct HitRatioSeries {
    last: Option<(u64, u64)>,
    seconds: Vec<Option<f64>>,
}

impl HitRatioSeries {
    fn new(engine: &dyn Engine) -> HitRatioSeries {
        HitRatioSeries {
            last: hits_and_misses(engine),
            seconds: Vec::new(),
        }
    }

    /// Closes seconds up to `elapsed_secs` (several at once share the
    /// ratio of their whole interval).
    fn tick(&mut self, engine: &dyn Engine, elapsed_secs: usize) {
        if elapsed_secs <= self.seconds.len() {
            return;
        }
        let (Some((h0, m0)), Some((h1, m1))) = (self.last, hits_and_misses(engine)) else {
            return;
        };
        let (h, m) = (h1.saturating_sub(h0), m1.saturating_sub(m0));
        let ratio = (h + m > 0).then(|| h as f64 / (h + m) as f64);
        self.seconds.resize(elapsed_secs, ratio);
        self.last = Some((h1, m1));
    }
}

fn hits_and_misses(engine: &dyn Engine) -> Option<(u64, u64)> {
    let c = engine.counters();
    Some((c.cache_hits?, c.cache_misses?))
}

/// Operations completed per second, sampled while the threads run.
struct Timeline {
    start: Instant,
    seconds: Vec<u64>,
    counted: u64,
}

impl Timeline {
    fn new(start: Instant) -> Timeline {
        Timeline {
            start,
            seconds: Vec::new(),
            counted: 0,
        }
    }

    /// Closes every full second elapsed so far with the count `done`.
    fn tick(&mut self, done: u64) {
        while self.start.elapsed().as_secs() as usize > self.seconds.len() {
            self.seconds.push(done - self.counted);
            self.counted = done;
        }
    }

    /// Adds the last partial second, scaled to a full one.
    fn finish(mut self, done: u64) -> Vec<u64> {
        let partial = self.start.elapsed().as_secs_f64() - self.seconds.len() as f64;
        let rest = done - self.counted;
        if partial > 0.0 && (rest > 0 || self.seconds.is_empty()) {
            self.seconds
                .push((rest as f64 / partial.max(0.001)).round() as u64);
        }
        self.seconds
    }
}

fn progress_bar(total: u64, label: String) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec})",
        )
        .expect("valid template"),
    );
    bar.set_message(label);
    bar
}

/// Runs the plan's streams until done, the deadline, or (for the writer)
/// until the others are done; the calling thread keeps the timeline.
fn execute(ctx: &PhaseContext<'_>, plan: PhasePlan) -> Result<Phase, String> {
    let signals = PhaseSignals {
        done: AtomicU64::new(0),
        readers_done: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        running: AtomicUsize::new(plan.streams.len()),
    };
    let bar = progress_bar(plan.total, plan.label);
    let start = Instant::now();
    let mut timeline = Timeline::new(start);
    let mut reader_timeline = Timeline::new(start);
    let mut hit_ratios = HitRatioSeries::new(ctx.engine);
    let mut mechanisms = super::mechanisms::MechanismTimeline::default();
    let mut peak_space_bytes = 0;
    let mut next_space_sample = start;
    let has_writer = plan.writer.is_some();
    let results: Vec<Result<ThreadStats, String>> = std::thread::scope(|scope| {
        let signals = &signals;
        let n = plan.streams.len();
        let reader_pace = plan.reader_pace;
        let mut handles: Vec<_> = plan
            .streams
            .into_iter()
            .enumerate()
            .map(|(t, s)| {
                scope.spawn(move || {
                    // Counted out even if `drive` panics: the loop below
                    // waits for every stream.
                    let _counted = CountedOut(&signals.running);
                    drive(ctx, signals, s, t, Role::Reader(reader_pace))
                })
            })
            .collect();
        if let Some((s, pace)) = plan.writer {
            handles.push(scope.spawn(move || drive(ctx, signals, s, n, Role::Writer(pace))));
        }
        while signals.running.load(Ordering::Acquire) > 0 {
            std::thread::sleep(Duration::from_millis(10));
            let done = signals.done.load(Ordering::Relaxed);
            timeline.tick(done);
            reader_timeline.tick(signals.readers_done.load(Ordering::Relaxed));
            hit_ratios.tick(ctx.engine, start.elapsed().as_secs() as usize);
            mechanisms.tick(start.elapsed().as_secs() as usize, || {
                ctx.engine.live_stats()
            });
            if Instant::now() >= next_space_sample {
                // A file removed while it is walked reads as an error: skip
                // that sample, the next one sees the directory settled.
                if let Ok(bytes) = procfs::disk_usage(ctx.db) {
                    peak_space_bytes = peak_space_bytes.max(bytes);
                }
                next_space_sample = Instant::now() + SPACE_SAMPLE_EVERY;
            }
            if start.elapsed() > PROGRESS_AFTER && bar.is_hidden() {
                bar.set_draw_target(ProgressDrawTarget::stderr());
            }
            bar.set_position(done);
            if plan.deadline.is_some_and(|d| start.elapsed() >= d) {
                signals.stop.store(true, Ordering::Relaxed);
            }
        }
        signals.stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a bench thread panicked".into()))
            })
            .collect()
    });
    let seconds = start.elapsed().as_secs_f64();
    let timeline = timeline.finish(signals.done.load(Ordering::Relaxed));
    let reader_timeline = if has_writer {
        reader_timeline.finish(signals.readers_done.load(Ordering::Relaxed))
    } else {
        Vec::new()
    };
    bar.finish_and_clear();
    let mut stats = ThreadStats::new();
    for r in results {
        stats.merge(&r?);
    }
    Ok(Phase {
        stats,
        seconds,
        timeline,
        reader_timeline,
        hit_ratio_timeline: hit_ratios.seconds,
        mechanism_timeline: mechanisms.finish(),
        peak_space_bytes,
    })
}

fn delta(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(b?.saturating_sub(a?))
}

fn per(a: Option<u64>, b: u64) -> Option<f64> {
    (b > 0).then(|| a.map(|a| a as f64 / b as f64)).flatten()
}

/// Loads the key space (not measured, not timed per operation); its
/// seconds.
fn prefill(
    ctx: &PhaseContext<'_>,
    p: &Params,
    order: &std::sync::Arc<Vec<u64>>,
    label: String,
) -> Result<f64, String> {
    let plan = PhasePlan {
        label,
        streams: prefill_streams(p, ctx.space, order),
        writer: None,
        reader_pace: None,
        deadline: None,
        total: prefill_count(p, ctx.space),
    };
    let quiet = PhaseContext {
        latency: LatencyMode::Off,
        seed: ctx.seed ^ 0xabc,
        ..*ctx
    };
    Ok(execute(&quiet, plan)?.seconds)
}

/// Seconds spent waiting for the engine's background work, then for the
/// kernel to write the store's dirty pages back (`procfs::write_back`).
fn settle(engine: &dyn Engine, db: &Path) -> Result<f64, String> {
    let start = Instant::now();
    engine.wait_for_compactions()?;
    procfs::write_back(db)?;
    Ok(start.elapsed().as_secs_f64())
}

/// The measured phase and the counters read around it.
struct Measured {
    phase: Phase,
    /// `/proc/self/io` write bytes at the start.
    io_before: u64,
    /// `/proc/self/io` reads over the phase.
    reads: procfs::ReadCounters,
    /// Major faults of this process over the phase.
    major_faults: u64,
    /// Requests the store's device completed over the phase.
    device_ops: Option<procfs::DeviceOps>,
    counters: (Counters, Counters),
}

fn measure(
    ctx: &PhaseContext<'_>,
    s: &Settings,
    p: &Params,
    order: &std::sync::Arc<Vec<u64>>,
) -> Result<Measured, String> {
    let plan = PhasePlan {
        label: format!("{} {} run", s.engine, s.workload),
        streams: (0..p.threads)
            .map(|t| OpStream::measured(p, ctx.space, order, t, false))
            .collect(),
        writer: p.writer().map(|pace| {
            (
                OpStream::measured(p, ctx.space, order, p.threads, true),
                pace,
            )
        }),
        reader_pace: p.reader_pace(),
        deadline: s.duration_secs.map(Duration::from_secs_f64),
        total: s.ops,
    };
    let io_before = procfs::write_bytes()?;
    let reads_before = procfs::read_counters()?;
    let faults_before = procfs::major_faults()?;
    let device_before = procfs::device_ops(&s.db);
    let c0 = ctx.engine.counters();
    let phase = execute(ctx, plan)?;
    let c1 = ctx.engine.counters();
    let reads = procfs::read_counters()?.since(reads_before);
    let major_faults = procfs::major_faults()?.saturating_sub(faults_before);
    let device_ops = device_before
        .zip(procfs::device_ops(&s.db))
        .map(|(before, after)| after.since(before));
    Ok(Measured {
        phase,
        io_before,
        reads,
        major_faults,
        device_ops,
        counters: (c0, c1),
    })
}

/// Per-kind counts, latencies and the latency of all timed operations.
struct LatencySummary {
    op_counts: BTreeMap<String, u64>,
    by_op: BTreeMap<String, Latency>,
    all: Histogram<u64>,
}

fn summarize_latency(st: &ThreadStats) -> LatencySummary {
    let mut all = latency_histogram();
    let mut op_counts = BTreeMap::new();
    let mut by_op = BTreeMap::new();
    for ((kind, h), &count) in OP_KINDS.iter().zip(&st.hist).zip(&st.counts) {
        if count > 0 {
            op_counts.insert(kind.to_string(), count);
        }
        if !h.is_empty() {
            all.add(h).expect("same bounds");
            by_op.insert(kind.to_string(), Latency::from_histogram(h));
        }
    }
    LatencySummary {
        op_counts,
        by_op,
        all,
    }
}

/// Loads the settings' key space into `engine` as a prefill does (the
/// recovery workload's load); its seconds.
pub fn load(engine: &dyn Engine, s: &Settings) -> Result<f64, String> {
    let p: Params = s.params()?;
    let space = KeySpace::new(&p);
    let order = prefill_order(&p, &space);
    let shared = Shared::default();
    let ctx = PhaseContext {
        engine,
        db: &s.db,
        space: &space,
        shared: &shared,
        latency: s.latency,
        seed: s.seed,
    };
    prefill(
        &ctx,
        &p,
        &order,
        format!("{} {} load", s.engine, s.workload),
    )
}

/// The statistics read at the end of the phase, with the space figures of
/// the reopened store added.
fn with_space(
    stats: Option<serde_json::Value>,
    space: Option<serde_json::Value>,
) -> Option<serde_json::Value> {
    match (stats, space) {
        (Some(stats), Some(space)) => Some(crate::stats_json::with_space(stats, space)),
        (stats, _) => stats,
    }
}

/// Entries in the store, by a full scan.
fn count_entries(engine: &dyn Engine) -> Result<u64, String> {
    let mut cursor = engine.cursor()?;
    let mut n = 0;
    while cursor.next_entry()?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// Runs the settings' engine and workload; the store directory must be new.
pub fn run(s: &Settings) -> Result<RunResult, String> {
    let p: Params = s.params()?;
    let space = KeySpace::new(&p);
    let order = prefill_order(&p, &space);
    let engine = engine::open(s)?;
    let shared = Shared::default();
    let ctx = PhaseContext {
        engine: &*engine,
        db: &s.db,
        space: &space,
        shared: &shared,
        latency: s.latency,
        seed: s.seed,
    };
    let mut prefill_seconds = None;
    let mut settle_seconds = None;
    if p.workload.prefills() {
        let label = format!("{} {} prefill", s.engine, s.workload);
        prefill_seconds = Some(prefill(&ctx, &p, &order, label)?);
        if s.settle {
            settle_seconds = Some(settle(&*engine, &s.db)?);
        }
    }
    let m = measure(&ctx, s, &p, &order)?;
    let stats_at_end = engine.live_stats();
    // The device bytes run until the close, right after the phase: they
    // include the background work the measured writes caused, up to where
    // the close stops it (each engine abandons a compaction under way).
    engine.close()?;
    let device_write_bytes = procfs::write_bytes()?.saturating_sub(m.io_before);
    let space_bytes = procfs::disk_usage(&s.db)?;
    // The scans read a read-only reopen: run before the close, they let
    // background work go on for the device bytes to count (ThicketDB's
    // space figures alone took 1.5 s at 1M keys, a whole compaction).
    let reader = engine::open_read_only(s)?;
    let engine_stats = with_space(stats_at_end, reader.space_stats());
    // With half the key space pre-populated, updates of absent keys insert
    // them: count what is live (not timed).
    let live_keys = if p.workload.prefills_half() {
        count_entries(&*reader)?
    } else {
        space.count + shared.next_insert.load(Ordering::Acquire)
    };
    reader.close()?;

    let st = &m.phase.stats;
    let lat = summarize_latency(st);
    let ops = st.counts.iter().sum();
    let logical_bytes = space.logical_bytes(live_keys);
    let (c0, c1) = m.counters;
    let engine_write_bytes = delta(c0.bytes_written, c1.bytes_written);
    let hits = delta(c0.cache_hits, c1.cache_hits);
    let misses = delta(c0.cache_misses, c1.cache_misses);
    let seconds = m.phase.seconds.max(1e-9);
    let point_reads = st.found + st.not_found;
    let chunk_gets = c1.chunk_gets.zip(c0.chunk_gets).map(|(b, a)| b.since(a));
    Ok(RunResult {
        engine: s.engine.clone(),
        profile: s.profile.clone(),
        workload: s.workload.clone(),
        ops,
        seconds: m.phase.seconds,
        ops_per_sec: ops as f64 / seconds,
        mb_per_sec: st.bytes as f64 / seconds / (1u64 << 20) as f64,
        op_counts: lat.op_counts,
        found: st.found,
        not_found: st.not_found,
        entries_read: st.entries,
        latency_us: (!lat.all.is_empty()).then(|| Latency::from_histogram(&lat.all)),
        latency_by_op: lat.by_op,
        latency_cdf: cdf(&lat.all),
        user_bytes_written: st.user_bytes,
        device_write_bytes,
        device_write_amplification: per(Some(device_write_bytes), st.user_bytes),
        engine_write_bytes,
        engine_write_amplification: per(engine_write_bytes, st.user_bytes),
        fsyncs: delta(c0.fsyncs, c1.fsyncs),
        read_amplification: match (
            delta(c0.gets, c1.gets),
            delta(c0.get_blocks_read, c1.get_blocks_read),
        ) {
            (Some(gets), Some(blocks)) if gets > 0 => Some(blocks as f64 / gets as f64),
            _ => None,
        },
        flush_bytes_written: c1.flush_bytes,
        compaction_bytes_written: c1.compaction_bytes,
        device_read_bytes: m.reads.device_bytes,
        read_syscalls: m.reads.syscalls,
        read_syscall_bytes: m.reads.syscall_bytes,
        device_read_bytes_per_get: per(Some(m.reads.device_bytes), point_reads),
        read_syscalls_per_get: per(Some(m.reads.syscalls), point_reads),
        read_syscall_bytes_per_get: per(Some(m.reads.syscall_bytes), point_reads),
        chunk_get_shares: chunk_gets.and_then(ChunkGetShares::of),
        major_faults: Some(m.major_faults),
        device_read_ops: m.device_ops.map(|d| d.reads),
        device_write_ops: m.device_ops.map(|d| d.writes),
        device_read_ops_per_get: m.device_ops.and_then(|d| per(Some(d.reads), point_reads)),
        memory_cap: None,
        direct_io_applied: engine::direct_io_applied(s),
        mechanism_counters: engine_stats.as_ref().map(super::mechanisms::pick),
        engine_stats,
        recovery: None,
        live_keys,
        logical_bytes,
        space_bytes,
        space_amplification: per(Some(space_bytes), logical_bytes),
        peak_space_bytes: Some(m.phase.peak_space_bytes.max(space_bytes)),
        peak_space_amplification: per(
            Some(m.phase.peak_space_bytes.max(space_bytes)),
            logical_bytes,
        ),
        peak_rss_bytes: procfs::peak_rss()?,
        block_cache_hit_ratio: match (hits, misses) {
            (Some(h), Some(m)) if h + m > 0 => Some(h as f64 / (h + m) as f64),
            _ => None,
        },
        prefill_seconds,
        settle_seconds,
        timeline: m.phase.timeline,
        reader_timeline: m.phase.reader_timeline,
        hit_ratio_timeline: m.phase.hit_ratio_timeline,
        mechanism_timeline: m.phase.mechanism_timeline,
        settings: s.clone(),
    })
}

/// Counts a stream out of `PhaseSignals::running` when dropped (its
/// thread returned or panicked).
struct CountedOut<'a>(&'a AtomicUsize);

impl Drop for CountedOut<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
