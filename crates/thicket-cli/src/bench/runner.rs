//! One engine running one workload, inside the child process: prefill,
//! measured phase (threads, HDR histograms, per-second timeline), then the
//! process's own I/O and memory counters.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::args::Settings;
use super::engine::{self, Counters, Cursor, Engine};
use super::generators::Rng;
use super::procfs;
use super::report::{cdf, Latency, RunResult};
use super::workload::{prefill_order, KeySpace, Op, OpStream, Params, Shared, Workload, OP_KINDS};

/// Runs longer than this get a progress bar (on a terminal).
const PROGRESS_AFTER: Duration = Duration::from_secs(3);
/// Highest latency the histograms hold: one minute, in nanoseconds.
const MAX_LATENCY_NS: u64 = 60_000_000_000;
const VALUE_POOL: usize = 1 << 20;

/// What one thread measured.
struct ThreadStats {
    hist: Vec<Histogram<u64>>,
    found: u64,
    not_found: u64,
    entries: u64,
    user_bytes: u64,
    bytes: u64,
}

impl ThreadStats {
    fn new() -> ThreadStats {
        let h = Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid histogram bounds");
        ThreadStats {
            hist: vec![h; OP_KINDS.len()],
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
    fn new(engine: &'a dyn Engine, space: &'a KeySpace, shared: &'a Shared, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let pool = (0..VALUE_POOL + 4096)
            .map(|_| rng.next_u64() as u8)
            .collect();
        Worker {
            engine,
            space,
            shared,
            key: Vec::with_capacity(space.key_size),
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
}

/// The outcome of one phase.
struct Phase {
    stats: ThreadStats,
    seconds: f64,
    timeline: Vec<u64>,
}

/// Runs `streams` (one per thread) until done, the deadline, or (for the
/// extra `writer` stream) until the others are done.
#[allow(clippy::too_many_arguments)]
fn execute(
    engine: &dyn Engine,
    space: &KeySpace,
    shared: &Shared,
    streams: Vec<OpStream>,
    writer: Option<OpStream>,
    deadline: Option<Duration>,
    total: u64,
    label: String,
    seed: u64,
) -> Result<Phase, String> {
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let running = AtomicUsize::new(streams.len());
    let start = Instant::now();
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec})",
        )
        .expect("valid template"),
    );
    bar.set_message(label);
    let mut timeline = Vec::new();
    let results: Vec<Result<ThreadStats, String>> = std::thread::scope(|scope| {
        let work = |mut stream: OpStream, t: usize, is_writer: bool| {
            let (done, stop, running) = (&done, &stop, &running);
            move || -> Result<ThreadStats, String> {
                let mut w = Worker::new(engine, space, shared, seed ^ (t as u64 + 1) << 32);
                let result = (|| {
                    while !stop.load(Ordering::Relaxed) {
                        let Some(op) = stream.next(shared) else { break };
                        let t0 = Instant::now();
                        let more = w.run(op)?;
                        let ns = t0.elapsed().as_nanos() as u64;
                        if !more {
                            break;
                        }
                        w.stats.hist[op.kind()].saturating_record(ns.max(1));
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                })();
                if !is_writer {
                    running.fetch_sub(1, Ordering::AcqRel);
                }
                result.map(|()| w.stats)
            }
        };
        let n = streams.len();
        let mut handles: Vec<_> = streams
            .into_iter()
            .enumerate()
            .map(|(t, s)| scope.spawn(work(s, t, false)))
            .collect();
        if let Some(s) = writer {
            handles.push(scope.spawn(work(s, n, true)));
        }
        let mut last = 0;
        while running.load(Ordering::Acquire) > 0 {
            std::thread::sleep(Duration::from_millis(10));
            let elapsed = start.elapsed();
            let now = done.load(Ordering::Relaxed);
            while elapsed.as_secs() as usize > timeline.len() {
                timeline.push(now - last);
                last = now;
            }
            if elapsed > PROGRESS_AFTER && bar.is_hidden() {
                bar.set_draw_target(ProgressDrawTarget::stderr());
            }
            bar.set_position(now);
            if deadline.is_some_and(|d| elapsed >= d) {
                stop.store(true, Ordering::Relaxed);
            }
        }
        stop.store(true, Ordering::Relaxed);
        let results = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a bench thread panicked".into()))
            })
            .collect();
        let seconds = start.elapsed().as_secs_f64();
        let partial = seconds - timeline.len() as f64;
        let rest = done.load(Ordering::Relaxed) - last;
        if partial > 0.0 && (rest > 0 || timeline.is_empty()) {
            timeline.push((rest as f64 / partial.max(0.001)).round() as u64);
        }
        results
    });
    bar.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();
    let mut stats = ThreadStats::new();
    for r in results {
        stats.merge(&r?);
    }
    Ok(Phase {
        stats,
        seconds,
        timeline,
    })
}

fn delta(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(b?.saturating_sub(a?))
}

fn per(a: Option<u64>, b: u64) -> Option<f64> {
    (b > 0).then(|| a.map(|a| a as f64 / b as f64)).flatten()
}

/// Runs the settings' engine and workload; the store directory must be new.
pub fn run(s: &Settings) -> Result<RunResult, String> {
    let p: Params = s.params()?;
    let space = KeySpace::new(&p);
    let order = prefill_order(&p, &space);
    let engine = engine::open(s)?;
    let shared = Shared::default();
    let label = |phase: &str| format!("{} {} {phase}", s.engine, s.workload);
    let mut prefill_seconds = None;
    if p.workload.prefills() {
        let streams = (0..p.threads)
            .map(|t| OpStream::prefill(order.clone(), p.threads, t))
            .collect();
        let phase = execute(
            &*engine,
            &space,
            &shared,
            streams,
            None,
            None,
            space.count,
            label("prefill"),
            s.seed ^ 0xabc,
        )?;
        prefill_seconds = Some(phase.seconds);
    }

    let io0 = procfs::write_bytes()?;
    let c0 = engine.counters();
    let streams = (0..p.threads)
        .map(|t| OpStream::measured(&p, &space, &order, t, false))
        .collect();
    let writer = (p.workload == Workload::ReadWhileWriting)
        .then(|| OpStream::measured(&p, &space, &order, p.threads, true));
    let phase = execute(
        &*engine,
        &space,
        &shared,
        streams,
        writer,
        s.duration_secs.map(Duration::from_secs_f64),
        s.ops,
        label("run"),
        s.seed,
    )?;
    let c1: Counters = engine.counters();
    engine.close()?;
    let io1 = procfs::write_bytes()?;

    let st = &phase.stats;
    let mut all = Histogram::<u64>::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid bounds");
    let mut op_counts = BTreeMap::new();
    let mut latency_by_op = BTreeMap::new();
    for (kind, h) in OP_KINDS.iter().zip(&st.hist) {
        if h.is_empty() {
            continue;
        }
        all.add(h).expect("same bounds");
        op_counts.insert(kind.to_string(), h.len());
        latency_by_op.insert(kind.to_string(), Latency::from_histogram(h));
    }
    let ops = all.len();
    let live_keys = space.count + shared.next_insert.load(Ordering::Acquire);
    let logical_bytes = space.logical_bytes(live_keys);
    let space_bytes = procfs::disk_usage(&s.db)?;
    let device_write_bytes = io1.saturating_sub(io0);
    let engine_write_bytes = delta(c0.bytes_written, c1.bytes_written);
    let hits = delta(c0.cache_hits, c1.cache_hits);
    let misses = delta(c0.cache_misses, c1.cache_misses);
    let seconds = phase.seconds.max(1e-9);
    Ok(RunResult {
        engine: s.engine.clone(),
        profile: s.profile.clone(),
        workload: s.workload.clone(),
        ops,
        seconds: phase.seconds,
        ops_per_sec: ops as f64 / seconds,
        mb_per_sec: st.bytes as f64 / seconds / (1u64 << 20) as f64,
        op_counts,
        found: st.found,
        not_found: st.not_found,
        entries_read: st.entries,
        latency_us: Latency::from_histogram(&all),
        latency_by_op,
        latency_cdf: cdf(&all),
        user_bytes_written: st.user_bytes,
        device_write_bytes,
        device_write_amplification: per(Some(device_write_bytes), st.user_bytes),
        engine_write_bytes,
        engine_write_amplification: per(engine_write_bytes, st.user_bytes),
        fsyncs: delta(c0.fsyncs, c1.fsyncs),
        live_keys,
        logical_bytes,
        space_bytes,
        space_amplification: per(Some(space_bytes), logical_bytes),
        peak_rss_bytes: procfs::peak_rss()?,
        block_cache_hit_ratio: match (hits, misses) {
            (Some(h), Some(m)) if h + m > 0 => Some(h as f64 / (h + m) as f64),
            _ => None,
        },
        prefill_seconds,
        timeline: phase.timeline,
        settings: s.clone(),
    })
}
