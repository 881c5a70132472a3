//! Workloads: which keys exist before a run, which operations a run issues
//! and on which keys. Everything here is a pure function of the settings
//! and the seed, so every engine gets the same operations.
//!
//! Keys are numbered by a *keynum* (`0..count` after the prefill, inserts
//! take the next numbers). A keynum maps to a 64-bit *key id* stored
//! big-endian at the end of the key, after a `k000…` filler up to the key
//! size: the id is the keynum itself (db_bench, papers), YCSB's
//! `fnvhash64(keynum)` (so YCSB inserts land all over the key space), or a
//! composite id whose 14 high bits are a primary attribute (YoDB).

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::generators::{fnvhash64, Hotspot, Rng, ScrambledZipfian, SkewedLatest, Zipfian};
use crate::permutation::permutation;

/// YoDB's Zipfian constant for `zipf-simple` and `zipf-composite`.
pub const YODB_THETA: f64 = 0.8;
/// Bits of the primary attribute of a composite key (YoDB).
pub const COMPOSITE_PREFIX_BITS: u32 = 14;
/// SifrDB's key size; its values are uniform in 1..=200 bytes.
pub const SIFRDB_KEY_SIZE: usize = 23;
pub const SIFRDB_MAX_VALUE: usize = 200;
/// YCSB's `maxscanlength` default (scan lengths uniform in 1..=100).
pub const YCSB_MAX_SCAN: usize = 100;
/// LSbM's RangeHot: this share of reads fall in the hot range.
pub const RANGEHOT_READ_SHARE: f64 = 0.98;

macro_rules! workloads {
    ($($variant:ident => $name:literal),* $(,)?) => {
        /// A named workload (`--workload`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Workload { $($variant),* }

        impl Workload {
            pub const ALL: &'static [Workload] = &[$(Workload::$variant),*];

            pub fn name(self) -> &'static str {
                match self { $(Workload::$variant => $name),* }
            }
        }
    };
}

workloads! {
    FillSeq => "fillseq",
    FillRandom => "fillrandom",
    Overwrite => "overwrite",
    ReadRandom => "readrandom",
    ReadSeq => "readseq",
    SeekRandom => "seekrandom",
    ReadWhileWriting => "readwhilewriting",
    Load => "load",
    A => "a",
    B => "b",
    C => "c",
    D => "d",
    E => "e",
    F => "f",
    P => "p",
    Sifrdb => "sifrdb",
    Ws1 => "ws1",
    Ws2 => "ws2",
    Ws3 => "ws3",
    ZipfSimple => "zipf-simple",
    ZipfComposite => "zipf-composite",
    RangeHot => "rangehot",
    Recovery => "recovery",
}

/// YoDB's key distributions (θ = `YODB_THETA`): workloads of their own
/// (`zipf-simple`, `zipf-composite`: gets or scans and puts by
/// `--read-ratio`), or the keys of a YCSB mix (`--distribution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Zipf ranks over a seeded permutation of the keys: popular keys are
    /// dispersed (no spatial locality).
    ZipfSimple,
    /// Composite keys: a 14-bit primary attribute and the rest, each drawn
    /// by Zipf (high spatial locality).
    ZipfComposite,
}

impl Distribution {
    pub const ALL: &'static [Distribution] =
        &[Distribution::ZipfSimple, Distribution::ZipfComposite];

    pub fn name(self) -> &'static str {
        match self {
            Distribution::ZipfSimple => "zipf-simple",
            Distribution::ZipfComposite => "zipf-composite",
        }
    }
}

impl FromStr for Distribution {
    type Err = String;
    fn from_str(s: &str) -> Result<Distribution, String> {
        Distribution::ALL
            .iter()
            .copied()
            .find(|d| d.name() == s)
            .ok_or_else(|| {
                format!("unknown distribution {s:?} (known: zipf-simple, zipf-composite)")
            })
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = String;
    fn from_str(s: &str) -> Result<Workload, String> {
        let s = s.strip_prefix("ycsb-").unwrap_or(s);
        Workload::ALL
            .iter()
            .copied()
            .find(|w| w.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Workload::ALL.iter().map(|w| w.name()).collect();
                format!("unknown workload {s:?} (known: {})", names.join(", "))
            })
    }
}

impl Workload {
    /// Whether the store is loaded with `count` keys before measuring.
    pub fn prefills(self) -> bool {
        !self.is_fill() && self != Workload::Recovery
    }

    /// TRIAD's synthetic workloads pre-populate half of their key space
    /// (a random half), so that updates also insert new keys (TRIAD §5).
    pub fn prefills_half(self) -> bool {
        matches!(self, Workload::Ws1 | Workload::Ws2 | Workload::Ws3)
    }

    /// The YCSB mixes whose keys `--distribution` may draw instead of
    /// YCSB's own generators (d keeps its Latest generator, the fills
    /// their order).
    pub fn takes_distribution(self) -> bool {
        use Workload::*;
        matches!(self, A | B | C | E | F | P)
    }

    /// Whether `--scan-length` shapes the workload's reads.
    pub fn scans(self) -> bool {
        use Workload::*;
        matches!(self, SeekRandom | E | RangeHot | ZipfSimple | ZipfComposite)
    }

    /// The YoDB distribution the workload is itself.
    fn own_distribution(self) -> Option<Distribution> {
        match self {
            Workload::ZipfSimple => Some(Distribution::ZipfSimple),
            Workload::ZipfComposite => Some(Distribution::ZipfComposite),
            _ => None,
        }
    }

    /// Fill workloads write every key exactly once.
    pub fn is_fill(self) -> bool {
        matches!(
            self,
            Workload::FillSeq | Workload::FillRandom | Workload::Load | Workload::Sifrdb
        )
    }

    fn is_ycsb(self) -> bool {
        use Workload::*;
        matches!(self, Load | A | B | C | D | E | F | P)
    }

    /// The mix of a YCSB core workload.
    fn ycsb_mix(self) -> Mix {
        // Read-modify-write takes the rest.
        let m = |read, update, insert, scan| Mix {
            read,
            update,
            insert,
            scan,
        };
        match self {
            Workload::A => m(0.5, 0.5, 0.0, 0.0),
            Workload::B => m(0.95, 0.05, 0.0, 0.0),
            Workload::D => m(0.95, 0.0, 0.05, 0.0),
            Workload::E => m(0.0, 0.0, 0.05, 0.95),
            Workload::F => m(0.5, 0.0, 0.0, 0.0),
            Workload::P => m(0.0, 1.0, 0.0, 0.0),
            _ => m(1.0, 0.0, 0.0, 0.0),
        }
    }
}

/// The parameters a workload is generated from.
#[derive(Debug, Clone)]
pub struct Params {
    pub workload: Workload,
    /// Keys loaded (or filled).
    pub num: u64,
    /// Measured operations (fill workloads: `num`).
    pub ops: u64,
    pub threads: usize,
    pub key_size: usize,
    pub value_size: usize,
    /// Share of reads in ws*, zipf-* and rangehot.
    pub read_ratio: f64,
    /// Scan length of seekrandom, e (maximum) and rangehot (0: point reads).
    pub scan_length: Option<usize>,
    /// rangehot: share of the key space in the hot range.
    pub hot_fraction: f64,
    /// rangehot: operations per second of a separate writer thread (the
    /// other threads then only read).
    pub write_rate: Option<f64>,
    /// rangehot beside a writer: the readers' reads per second, all
    /// together (`None`: unpaced).
    pub read_rate: Option<f64>,
    /// The keys of a YCSB mix drawn by a YoDB distribution
    /// (`--distribution`; `takes_distribution` workloads only).
    pub distribution: Option<Distribution>,
    pub seed: u64,
}

impl Params {
    /// Whether the measured phase runs a writer thread beside the
    /// `threads` others, and at what pace (`None`: as fast as it can).
    pub fn writer(&self) -> Option<Option<f64>> {
        match self.workload {
            Workload::ReadWhileWriting => Some(None),
            Workload::RangeHot => self.write_rate.map(Some),
            _ => None,
        }
    }

    /// The pace of each reader thread of the measured phase, in operations
    /// per second (`None`: as fast as it can): its share of `read_rate`
    /// when a paced writer runs beside them (rangehot).
    pub fn reader_pace(&self) -> Option<f64> {
        match self.writer() {
            Some(Some(_)) => self.read_rate.map(|r| r / self.threads.max(1) as f64),
            _ => None,
        }
    }

    /// The YoDB distribution of the run's keys: the workload's own, or
    /// `--distribution` on a YCSB mix. Such runs load the store in key
    /// order (the paper's sequential fill) and draw every operation's key
    /// from the distribution; a YCSB insert becomes a put of a drawn key
    /// (the paper's E is 5% puts), so the key space stays the loaded one.
    pub fn key_distribution(&self) -> Option<Distribution> {
        self.workload.own_distribution().or(self
            .distribution
            .filter(|_| self.workload.takes_distribution()))
    }
}

/// How keynums become key ids.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Layout {
    Plain,
    Hashed,
    /// `prefixes * suffixes` keys; id = prefix << 50 | suffix.
    Composite {
        suffixes: u64,
    },
}

/// The key and value shapes of a run.
#[derive(Debug, Clone)]
pub struct KeySpace {
    layout: Layout,
    /// Keys before the run (after the prefill or the fill).
    pub count: u64,
    pub key_size: usize,
    value_size: Option<usize>,
}

impl KeySpace {
    pub fn new(p: &Params) -> KeySpace {
        let (layout, count) = match p.key_distribution() {
            Some(Distribution::ZipfComposite) => {
                let prefixes = p.num.clamp(1, 1 << COMPOSITE_PREFIX_BITS);
                let suffixes = (p.num / prefixes).max(1);
                (Layout::Composite { suffixes }, prefixes * suffixes)
            }
            Some(Distribution::ZipfSimple) => (Layout::Plain, p.num),
            None if p.workload.is_ycsb() => (Layout::Hashed, p.num),
            None => (Layout::Plain, p.num),
        };
        let sifr = p.workload == Workload::Sifrdb;
        KeySpace {
            layout,
            count,
            key_size: if sifr { SIFRDB_KEY_SIZE } else { p.key_size },
            value_size: (!sifr).then_some(p.value_size),
        }
    }

    pub fn key_id(&self, keynum: u64) -> u64 {
        match self.layout {
            Layout::Plain => keynum,
            Layout::Hashed => fnvhash64(keynum),
            Layout::Composite { suffixes } => {
                ((keynum / suffixes) << (64 - COMPOSITE_PREFIX_BITS)) | (keynum % suffixes)
            }
        }
    }

    /// The key of `keynum` into `buf` (cleared first).
    pub fn key_into(&self, buf: &mut Vec<u8>, keynum: u64) {
        buf.clear();
        let filler = self.key_size.saturating_sub(8);
        if filler > 0 {
            buf.push(b'k');
            buf.resize(filler, b'0');
        }
        buf.extend_from_slice(&self.key_id(keynum).to_be_bytes());
    }

    /// The value length of `keynum` (fixed, or SifrDB's uniform 1..=200
    /// drawn from the keynum so that rewrites keep the size).
    pub fn value_len(&self, keynum: u64) -> usize {
        match self.value_size {
            Some(v) => v,
            None => 1 + (fnvhash64(keynum ^ 0x5eed) % SIFRDB_MAX_VALUE as u64) as usize,
        }
    }

    /// Key plus value bytes of keynums `0..live`.
    pub fn logical_bytes(&self, live: u64) -> u64 {
        match self.value_size {
            Some(v) => live * (self.key_size + v) as u64,
            None => (0..live)
                .map(|k| (self.key_size + self.value_len(k)) as u64)
                .sum(),
        }
    }
}

/// One operation on one keynum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    Get(u64),
    Put(u64),
    Insert(u64),
    /// Seek to the key and read this many entries.
    Scan(u64, usize),
    /// Read-modify-write.
    Rmw(u64),
    /// The next entry of a sequential read.
    Next,
}

/// Operation kinds, the keys of the per-operation latency report.
pub const OP_KINDS: &[&str] = &["get", "put", "insert", "scan", "rmw", "next"];

impl Op {
    pub fn kind(self) -> usize {
        match self {
            Op::Get(_) => 0,
            Op::Put(_) => 1,
            Op::Insert(_) => 2,
            Op::Scan(..) => 3,
            Op::Rmw(_) => 4,
            Op::Next => 5,
        }
    }
}

/// State the threads of a run share: YCSB's insert counters.
#[derive(Debug, Default)]
pub struct Shared {
    /// Inserts handed out.
    pub next_insert: AtomicU64,
    /// Inserts completed.
    pub acked: AtomicU64,
}

#[derive(Debug, Clone, Copy)]
struct Mix {
    read: f64,
    update: f64,
    insert: f64,
    scan: f64,
}

impl Mix {
    /// The mix with its inserts turned into updates.
    fn inserts_as_updates(self) -> Mix {
        Mix {
            update: self.update + self.insert,
            insert: 0.0,
            ..self
        }
    }

    /// `read` gets, the rest updates.
    fn read_update(read: f64) -> Mix {
        Mix {
            read,
            update: 1.0 - read,
            insert: 0.0,
            scan: 0.0,
        }
    }
}

/// How a mixed stream picks the keynum of its next operation.
enum Chooser {
    Uniform,
    Scrambled(ScrambledZipfian),
    Latest(SkewedLatest),
    Hotspot(Hotspot),
    Permuted(Zipfian, Arc<Vec<u64>>),
    Composite(Zipfian, Zipfian, u64),
    RangeHot { start: u64, len: u64 },
}

impl Chooser {
    /// The chooser of `p`'s mixed workload over `n` keys; `order` is the
    /// prefill permutation (zipf-simple ranks it).
    fn for_workload(p: &Params, space: &KeySpace, order: &Arc<Vec<u64>>) -> Chooser {
        let n = space.count;
        match p.key_distribution() {
            Some(Distribution::ZipfSimple) => {
                return Chooser::Permuted(Zipfian::new(n, YODB_THETA), order.clone())
            }
            Some(Distribution::ZipfComposite) => {
                if let Layout::Composite { suffixes } = space.layout {
                    return Chooser::Composite(
                        Zipfian::new(n / suffixes, YODB_THETA),
                        Zipfian::new(suffixes, YODB_THETA),
                        suffixes,
                    );
                }
            }
            None => {}
        }
        use Workload::*;
        match p.workload {
            A | B | C | F | P => Chooser::Scrambled(ScrambledZipfian::new(0, n - 1)),
            D => Chooser::Latest(SkewedLatest::new(n - 1)),
            E => {
                let expected_new = (p.ops as f64 * 0.05 * 2.0) as u64;
                Chooser::Scrambled(ScrambledZipfian::new(0, n + expected_new))
            }
            Ws1 => Chooser::Hotspot(Hotspot::new(0, n - 1, 0.01, 0.99)),
            Ws2 => Chooser::Hotspot(Hotspot::new(0, n - 1, 0.2, 0.8)),
            RangeHot => {
                let len = ((n as f64 * p.hot_fraction) as u64).clamp(1, n);
                Chooser::RangeHot {
                    start: (n - len) / 2,
                    len,
                }
            }
            _ => Chooser::Uniform,
        }
    }

    /// A keynum among `n` (`last` is the newest acknowledged one) for a read
    /// (`is_read`) or a write.
    fn choose(&mut self, rng: &mut Rng, n: u64, last: u64, is_read: bool) -> u64 {
        match self {
            Chooser::Uniform => rng.below(n),
            Chooser::Scrambled(g) => loop {
                let k = g.next(rng);
                if k <= last {
                    break k;
                }
            },
            Chooser::Latest(g) => g.next(last, rng),
            Chooser::Hotspot(g) => g.next(rng),
            Chooser::Permuted(z, perm) => perm[z.next(rng) as usize],
            Chooser::Composite(zp, zs, suffixes) => zp.next(rng) * *suffixes + zs.next(rng),
            Chooser::RangeHot { start, len } => {
                if is_read && rng.next_f64() < RANGEHOT_READ_SHARE {
                    *start + rng.below(*len)
                } else if is_read && *len < n {
                    // The cold part, uniformly.
                    let c = rng.below(n - *len);
                    if c < *start {
                        c
                    } else {
                        c + *len
                    }
                } else {
                    rng.below(n)
                }
            }
        }
    }
}

/// A fixed list of keynums (fills and prefills), as puts or inserts.
struct KeyList {
    keys: Arc<Vec<u64>>,
    at: usize,
    end: usize,
    insert: bool,
}

impl KeyList {
    fn next(&mut self) -> Option<Op> {
        if self.at >= self.end {
            return None;
        }
        let k = self.keys[self.at];
        self.at += 1;
        Some(if self.insert {
            Op::Insert(k)
        } else {
            Op::Put(k)
        })
    }
}

/// Reads, updates, inserts, scans and read-modify-writes drawn by `mix`.
struct Mixed {
    mix: Mix,
    chooser: Chooser,
    /// Reads are scans of (length, uniform in 1..=length) instead of gets.
    reads_scan: Option<(usize, bool)>,
    left: u64,
}

impl Mixed {
    fn next(&mut self, rng: &mut Rng, n: u64, shared: &Shared) -> Option<Op> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let r = rng.next_f64();
        let mix = self.mix;
        let is_read = r < mix.read;
        let last = n + shared.acked.load(Ordering::Acquire) - 1;
        let scan = |rng: &mut Rng, k, (len, uniform): (usize, bool)| {
            let len = if uniform {
                1 + rng.below(len as u64) as usize
            } else {
                len
            };
            Op::Scan(k, len)
        };
        Some(if is_read {
            let k = self.chooser.choose(rng, n, last, true);
            match self.reads_scan {
                Some(s) => scan(rng, k, s),
                None => Op::Get(k),
            }
        } else if r < mix.read + mix.update {
            Op::Put(self.chooser.choose(rng, n, last, false))
        } else if r < mix.read + mix.update + mix.insert {
            Op::Insert(n + shared.next_insert.fetch_add(1, Ordering::AcqRel))
        } else if r < mix.read + mix.update + mix.insert + mix.scan {
            let k = self.chooser.choose(rng, n, last, false);
            scan(rng, k, self.reads_scan.unwrap_or((YCSB_MAX_SCAN, true)))
        } else {
            Op::Rmw(self.chooser.choose(rng, n, last, false))
        })
    }
}

enum Source {
    List(KeyList),
    /// Puts of keynums `at..end` in order.
    Range {
        at: u64,
        end: u64,
    },
    Mixed(Mixed),
    /// `left` steps of one sequential reader.
    Sequential {
        left: u64,
    },
}

/// The operations of one thread.
pub struct OpStream {
    rng: Rng,
    count: u64,
    source: Source,
}

/// The seeded permutation of the keynums: fillrandom's and sifrdb's order,
/// zipf-simple's ranking, and the prefill order of the workloads that
/// `prefill_streams` does not load in key order; YCSB's is the keynums in
/// order (their keys are hashed).
pub fn prefill_order(p: &Params, space: &KeySpace) -> Arc<Vec<u64>> {
    Arc::new(if space.layout == Layout::Hashed {
        (0..space.count).collect()
    } else {
        permutation(0, space.count, p.seed ^ 0xf111)
    })
}

/// Keys the prefill writes: all of the key space, or half of it for the
/// workloads that pre-populate half (`Workload::prefills_half`).
pub fn prefill_count(p: &Params, space: &KeySpace) -> u64 {
    if p.workload.prefills_half() {
        space.count / 2
    } else {
        space.count
    }
}

/// The prefill's streams, one per thread: runs with a YoDB distribution
/// load in key order, each thread its contiguous share (the paper builds
/// its data set by a sequential fill); the others load `order` (its first
/// half for the workloads that pre-populate half).
pub fn prefill_streams(p: &Params, space: &KeySpace, order: &Arc<Vec<u64>>) -> Vec<OpStream> {
    let order = if p.workload.prefills_half() {
        Arc::new(order[..prefill_count(p, space) as usize].to_vec())
    } else {
        order.clone()
    };
    (0..p.threads)
        .map(|t| {
            if p.key_distribution().is_some() {
                let (at, end) = share(space.count, p.threads, t);
                OpStream {
                    rng: Rng::new(0),
                    count: 0,
                    source: Source::Range { at, end },
                }
            } else {
                OpStream::prefill(order.clone(), p.threads, t)
            }
        })
        .collect()
}

/// Thread `t`'s share `[start, end)` of `n` items.
pub fn share(n: u64, threads: usize, t: usize) -> (u64, u64) {
    let threads = threads as u64;
    let t = t as u64;
    let base = n / threads;
    let extra = n % threads;
    let start = t * base + t.min(extra);
    (start, start + base + u64::from(t < extra))
}

/// The mix of `p`'s mixed workload (the writer of readwhilewriting only
/// writes).
fn mix_of(p: &Params, writer: bool) -> Mix {
    use Workload::*;
    match p.workload {
        Overwrite => Mix::read_update(0.0),
        ReadWhileWriting | RangeHot if writer => Mix::read_update(0.0),
        RangeHot if p.write_rate.is_some() => Mix::read_update(1.0),
        A | B | C | D | E | F | P if p.key_distribution().is_some() => {
            p.workload.ycsb_mix().inserts_as_updates()
        }
        A | B | C | D | E | F | P => p.workload.ycsb_mix(),
        Ws1 | Ws2 | Ws3 | ZipfSimple | ZipfComposite | RangeHot => Mix::read_update(p.read_ratio),
        _ => Mix::read_update(1.0),
    }
}

/// Whether `p`'s reads are scans: (length, uniform in 1..=length).
fn reads_scan_of(p: &Params) -> Option<(usize, bool)> {
    match p.workload {
        Workload::SeekRandom => Some((p.scan_length.unwrap_or(1).max(1), false)),
        Workload::E => Some((p.scan_length.unwrap_or(YCSB_MAX_SCAN).max(1), true)),
        Workload::RangeHot => p.scan_length.filter(|&l| l > 0).map(|l| (l, false)),
        // YoDB's scan-dominated runs (its YCSB-E): scans of uniform length
        // 1..=L at keys drawn by the Zipf distribution.
        Workload::ZipfSimple | Workload::ZipfComposite => {
            p.scan_length.filter(|&l| l > 0).map(|l| (l, true))
        }
        _ => None,
    }
}

impl OpStream {
    /// Puts of `order`'s share for thread `t` (the prefill).
    fn prefill(order: Arc<Vec<u64>>, threads: usize, t: usize) -> OpStream {
        let (at, end) = share(order.len() as u64, threads, t);
        OpStream {
            rng: Rng::new(0),
            count: 0,
            source: Source::List(KeyList {
                keys: order,
                at: at as usize,
                end: end as usize,
                insert: false,
            }),
        }
    }

    /// The measured operations of thread `t` (`writer`: the extra writer
    /// thread of readwhilewriting). `order` is the fill permutation
    /// (fillrandom, sifrdb, zipf-simple's ranking).
    pub fn measured(
        p: &Params,
        space: &KeySpace,
        order: &Arc<Vec<u64>>,
        t: usize,
        writer: bool,
    ) -> OpStream {
        let (s, e) = share(space.count, p.threads, t);
        let left = if writer {
            u64::MAX
        } else {
            let (a, b) = share(p.ops, p.threads, t);
            b - a
        };
        use Workload::*;
        let source = match p.workload {
            FillSeq | Load => Source::Range { at: s, end: e },
            FillRandom | Sifrdb => Source::List(KeyList {
                keys: order.clone(),
                at: s as usize,
                end: e as usize,
                insert: false,
            }),
            ReadSeq => Source::Sequential { left },
            _ => Source::Mixed(Mixed {
                mix: mix_of(p, writer),
                chooser: Chooser::for_workload(p, space, order),
                reads_scan: reads_scan_of(p),
                left,
            }),
        };
        OpStream {
            rng: Rng::new(p.seed.wrapping_mul(0x9e37_79b9).wrapping_add(t as u64 + 1)),
            count: space.count,
            source,
        }
    }

    /// The next operation, or `None` when this thread is done.
    pub fn next(&mut self, shared: &Shared) -> Option<Op> {
        match &mut self.source {
            Source::List(list) => list.next(),
            Source::Range { at, end } => {
                if at >= end {
                    return None;
                }
                *at += 1;
                Some(Op::Put(*at - 1))
            }
            Source::Sequential { left } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                Some(Op::Next)
            }
            Source::Mixed(mixed) => mixed.next(&mut self.rng, self.count, shared),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    fn params(workload: Workload, num: u64, threads: usize) -> Params {
        Params {
            workload,
            num,
            ops: num,
            threads,
            key_size: 16,
            value_size: 100,
            read_ratio: 0.5,
            scan_length: None,
            hot_fraction: 0.15,
            write_rate: None,
            read_rate: None,
            distribution: None,
            seed: 42,
        }
    }

    /// `--read-rate` is shared by the readers, and only paces them beside
    /// a paced writer (rangehot with `--write-rate`).
    #[test]
    fn read_rate_is_split_among_readers_beside_a_paced_writer() {
        let p = Params {
            write_rate: Some(1000.0),
            read_rate: Some(8000.0),
            ..params(Workload::RangeHot, 1000, 8)
        };
        assert_eq!(p.reader_pace(), Some(1000.0));
        let unpaced_writer = Params {
            write_rate: None,
            ..p.clone()
        };
        assert_eq!(unpaced_writer.reader_pace(), None);
        let no_rate = Params {
            read_rate: None,
            ..p.clone()
        };
        assert_eq!(no_rate.reader_pace(), None);
        let other = Params {
            workload: Workload::ReadWhileWriting,
            ..p
        };
        assert_eq!(other.reader_pace(), None);
    }

    /// Every operation of every thread.
    fn all_ops(p: &Params) -> Vec<Op> {
        let space = KeySpace::new(p);
        let order = prefill_order(p, &space);
        let shared = Shared::default();
        let mut out = Vec::new();
        for t in 0..p.threads {
            let mut s = OpStream::measured(p, &space, &order, t, false);
            while let Some(op) = s.next(&shared) {
                if let Op::Insert(_) = op {
                    shared.acked.fetch_add(1, Ordering::AcqRel);
                }
                out.push(op);
            }
        }
        out
    }

    #[test]
    fn names_round_trip() {
        for w in Workload::ALL {
            assert_eq!(w.name().parse::<Workload>().unwrap(), *w);
        }
        assert_eq!("ycsb-a".parse::<Workload>().unwrap(), Workload::A);
        assert!("nope".parse::<Workload>().is_err());
    }

    #[test]
    fn fill_workloads_write_every_key_once() {
        for w in [
            Workload::FillSeq,
            Workload::FillRandom,
            Workload::Load,
            Workload::Sifrdb,
        ] {
            for threads in [1, 3] {
                let p = params(w, 10_007, threads);
                let space = KeySpace::new(&p);
                let mut keys = HashSet::new();
                let mut buf = Vec::new();
                let ops = all_ops(&p);
                assert_eq!(ops.len(), 10_007, "{w}");
                for op in ops {
                    let Op::Put(k) = op else {
                        panic!("{w}: {op:?}")
                    };
                    space.key_into(&mut buf, k);
                    assert_eq!(buf.len(), space.key_size);
                    assert!(keys.insert(buf.clone()), "{w}: duplicate key {k}");
                }
            }
        }
        let p = params(Workload::FillSeq, 1000, 2);
        let space = KeySpace::new(&p);
        let keys: Vec<Vec<u8>> = all_ops(&p)
            .into_iter()
            .map(|op| {
                let Op::Put(k) = op else { unreachable!() };
                let mut b = Vec::new();
                space.key_into(&mut b, k);
                b
            })
            .collect();
        assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "fillseq is in key order"
        );
        let fr = all_ops(&params(Workload::FillRandom, 1000, 1));
        assert!(
            fr.windows(2).any(|w| w[0] > w[1]),
            "fillrandom is not in order"
        );
    }

    /// The keys `p`'s prefill writes, each once.
    fn prefilled(p: &Params) -> HashSet<u64> {
        let space = KeySpace::new(p);
        let order = prefill_order(p, &space);
        let shared = Shared::default();
        let mut seen = HashSet::new();
        for mut s in prefill_streams(p, &space, &order) {
            while let Some(Op::Put(k)) = s.next(&shared) {
                assert!(seen.insert(k), "{k} written twice");
            }
        }
        seen
    }

    #[test]
    fn prefill_covers_the_key_space() {
        for w in [Workload::ReadRandom, Workload::A, Workload::ZipfComposite] {
            let p = params(w, 5000, 2);
            assert_eq!(prefilled(&p).len() as u64, KeySpace::new(&p).count);
        }
    }

    /// The keys of `p`'s prefill, thread by thread.
    fn prefill_keys(p: &Params) -> Vec<Vec<Vec<u8>>> {
        let space = KeySpace::new(p);
        let order = prefill_order(p, &space);
        let shared = Shared::default();
        prefill_streams(p, &space, &order)
            .into_iter()
            .map(|mut s| {
                let mut keys = Vec::new();
                while let Some(op) = s.next(&shared) {
                    let Op::Put(k) = op else { panic!("{op:?}") };
                    let mut buf = Vec::new();
                    space.key_into(&mut buf, k);
                    keys.push(buf);
                }
                keys
            })
            .collect()
    }

    /// The paper builds its data set by a sequential fill: runs with a
    /// YoDB distribution load each thread's share in key order; others
    /// keep their random (or YCSB's hashed) order.
    #[test]
    fn yodb_distributions_prefill_in_key_order() {
        let simple_a = Params {
            distribution: Some(Distribution::ZipfSimple),
            ..params(Workload::A, 5000, 2)
        };
        for p in [
            params(Workload::ZipfComposite, 5000, 2),
            params(Workload::ZipfSimple, 5000, 2),
            simple_a,
        ] {
            let threads = prefill_keys(&p);
            assert_eq!(threads.iter().map(Vec::len).sum::<usize>(), 5000);
            for keys in &threads {
                assert!(keys.windows(2).all(|w| w[0] < w[1]), "{:?}", p.workload);
            }
        }
        for w in [Workload::ReadRandom, Workload::A] {
            let threads = prefill_keys(&params(w, 5000, 1));
            assert!(threads[0].windows(2).any(|w| w[0] > w[1]), "{w}");
        }
    }

    /// `--distribution` draws a YCSB mix's keys exactly as the workload of
    /// that name draws them at the mix's read ratio: `a`, `c` and `p` under
    /// a distribution issue zipf-*'s operations at 0.5, 1 and 0.
    #[test]
    fn a_distribution_on_a_ycsb_mix_is_the_zipf_workload_at_its_read_ratio() {
        for (dist, own) in [
            (Distribution::ZipfSimple, Workload::ZipfSimple),
            (Distribution::ZipfComposite, Workload::ZipfComposite),
        ] {
            for (mix, read_ratio) in [(Workload::A, 0.5), (Workload::C, 1.0), (Workload::P, 0.0)] {
                let ycsb = Params {
                    distribution: Some(dist),
                    ..params(mix, 1 << 15, 2)
                };
                let zipf = Params {
                    read_ratio,
                    ..params(own, 1 << 15, 2)
                };
                assert_eq!(all_ops(&ycsb), all_ops(&zipf), "{mix} {}", dist.name());
            }
        }
        // D keeps YCSB's Latest keys: the distribution does not apply.
        let d = Params {
            distribution: Some(Distribution::ZipfComposite),
            ..params(Workload::D, 1000, 1)
        };
        assert_eq!(d.key_distribution(), None);
    }

    /// YoDB's E: 95% scans of 1..=L entries and 5% puts (no inserts), at
    /// keys of the loaded space drawn by the distribution.
    #[test]
    fn e_under_a_distribution_scans_and_puts_drawn_keys() {
        let p = Params {
            distribution: Some(Distribution::ZipfComposite),
            scan_length: Some(10),
            ..params(Workload::E, 1 << 16, 2)
        };
        let ops = all_ops(&p);
        let space = KeySpace::new(&p);
        let (mut scans, mut puts, mut prefix0) = (0, 0, 0);
        for op in &ops {
            match *op {
                Op::Scan(k, len) => {
                    assert!((1..=10).contains(&len));
                    assert!(k < space.count);
                    scans += 1;
                    prefix0 += usize::from(k < 4);
                }
                Op::Put(k) => {
                    assert!(k < space.count);
                    puts += 1;
                }
                other => panic!("{other:?}"),
            }
        }
        let share = scans as f64 / ops.len() as f64;
        assert!((share - 0.95).abs() < 0.01, "{share}");
        assert_eq!(scans + puts, ops.len());
        // The most popular prefix draws Zipf(0.8)'s rank-0 share of scans.
        let p0 = 1.0 / super::super::generators::zeta(0, 1 << 14, YODB_THETA, 0.0);
        let got = prefix0 as f64 / scans as f64;
        assert!((got - p0).abs() / p0 < 0.15, "{got} vs {p0}");
    }

    #[test]
    fn sifrdb_sizes() {
        let p = params(Workload::Sifrdb, 10_000, 1);
        let space = KeySpace::new(&p);
        let mut buf = Vec::new();
        space.key_into(&mut buf, 5);
        assert_eq!(buf.len(), SIFRDB_KEY_SIZE);
        let lens: Vec<usize> = (0..10_000).map(|k| space.value_len(k)).collect();
        assert!(lens.iter().all(|&l| (1..=200).contains(&l)));
        let mean = lens.iter().sum::<usize>() as f64 / lens.len() as f64;
        assert!((mean - 100.5).abs() < 3.0, "mean {mean}");
        assert!(lens.contains(&1) && lens.contains(&200));
        assert_eq!(
            space.logical_bytes(10_000),
            lens.iter()
                .map(|&l| (l + SIFRDB_KEY_SIZE) as u64)
                .sum::<u64>()
        );
    }

    #[test]
    fn ycsb_mixes_add_up() {
        for (w, kinds) in [
            (Workload::A, vec![(0, 0.5), (1, 0.5)]),
            (Workload::B, vec![(0, 0.95), (1, 0.05)]),
            (Workload::C, vec![(0, 1.0)]),
            (Workload::D, vec![(0, 0.95), (2, 0.05)]),
            (Workload::E, vec![(3, 0.95), (2, 0.05)]),
            (Workload::F, vec![(0, 0.5), (4, 0.5)]),
            (Workload::P, vec![(1, 1.0)]),
        ] {
            let p = params(w, 20_000, 2);
            let ops = all_ops(&p);
            assert_eq!(ops.len(), 20_000);
            let mut c: HashMap<usize, usize> = HashMap::new();
            for op in &ops {
                *c.entry(op.kind()).or_default() += 1;
            }
            for (kind, share) in kinds {
                let got = c.get(&kind).copied().unwrap_or(0) as f64 / ops.len() as f64;
                assert!((got - share).abs() < 0.02, "{w} kind {kind}: {got}");
            }
            let inserted = c.get(&2).copied().unwrap_or(0) as u64;
            for op in &ops {
                match *op {
                    // Latest (d) also reads the keys inserted so far.
                    Op::Get(k) | Op::Put(k) | Op::Rmw(k) => assert!(k < 20_000 + inserted),
                    Op::Scan(k, len) => {
                        assert!(k < 20_000 + 20_000 * 2 / 10);
                        assert!((1..=YCSB_MAX_SCAN).contains(&len));
                    }
                    Op::Insert(k) => assert!(k >= 20_000),
                    Op::Next => unreachable!(),
                }
            }
        }
    }

    #[test]
    fn ycsb_inserts_are_unique_and_latest_reads_recent_keys() {
        let p = params(Workload::D, 10_000, 2);
        let ops = all_ops(&p);
        let inserts: Vec<u64> = ops
            .iter()
            .filter_map(|op| {
                if let Op::Insert(k) = op {
                    Some(*k)
                } else {
                    None
                }
            })
            .collect();
        let set: HashSet<_> = inserts.iter().collect();
        assert_eq!(set.len(), inserts.len());
        // Latest: most reads fall near the newest keys.
        let recent = ops
            .iter()
            .filter(|op| matches!(op, Op::Get(k) if *k >= 9_000))
            .count();
        let reads = ops.iter().filter(|op| matches!(op, Op::Get(_))).count();
        assert!(recent as f64 / reads as f64 > 0.5, "{recent} of {reads}");
    }

    #[test]
    fn composite_keys_share_zipf_prefixes() {
        let p = params(Workload::ZipfComposite, 1 << 16, 1);
        let space = KeySpace::new(&p);
        assert_eq!(space.count, 1 << 16);
        let mut buf = Vec::new();
        let mut by_prefix: HashMap<u16, usize> = HashMap::new();
        let ops = all_ops(&p);
        for op in &ops {
            let (Op::Get(k) | Op::Put(k)) = *op else {
                panic!("{op:?}")
            };
            space.key_into(&mut buf, k);
            let id = u64::from_be_bytes(buf[8..16].try_into().unwrap());
            let prefix = (id >> (64 - COMPOSITE_PREFIX_BITS)) as u16;
            assert_eq!(
                prefix as u64,
                k / 4,
                "14 high bits are the primary attribute"
            );
            *by_prefix.entry(prefix).or_default() += 1;
        }
        // Prefix 0 is the most popular, with Zipf(0.8) rank-0 share.
        let top = by_prefix.iter().max_by_key(|(_, c)| **c).unwrap();
        assert_eq!(*top.0, 0);
        let p0 = 1.0 / super::super::generators::zeta(0, 1 << 14, YODB_THETA, 0.0);
        let got = *top.1 as f64 / ops.len() as f64;
        assert!((got - p0).abs() / p0 < 0.1, "{got} vs {p0}");
        // Keys of one prefix are contiguous in key order.
        let mut a = Vec::new();
        let mut b = Vec::new();
        space.key_into(&mut a, 3); // prefix 0, last suffix
        space.key_into(&mut b, 4); // prefix 1, first suffix
        assert!(a < b);
    }

    #[test]
    fn zipf_simple_ranks_a_permutation() {
        let p = params(Workload::ZipfSimple, 10_000, 1);
        let ops = all_ops(&p);
        let mut c: HashMap<u64, usize> = HashMap::new();
        for op in &ops {
            let (Op::Get(k) | Op::Put(k)) = *op else {
                panic!()
            };
            *c.entry(k).or_default() += 1;
        }
        let (&hot, _) = c.iter().max_by_key(|(_, n)| **n).unwrap();
        let space = KeySpace::new(&p);
        assert_eq!(
            hot,
            prefill_order(&p, &space)[0],
            "rank 0 is the permutation's first key"
        );
    }

    #[test]
    fn ws_workloads_prefill_a_random_half_of_the_key_space() {
        for w in [Workload::Ws1, Workload::Ws2, Workload::Ws3] {
            let p = params(w, 10_000, 2);
            let space = KeySpace::new(&p);
            let seen = prefilled(&p);
            assert_eq!(seen.len() as u64, prefill_count(&p, &space));
            assert_eq!(seen.len() as u64, space.count / 2);
            // A random half: both ends of the key space are represented.
            assert!(seen.iter().any(|&k| k < space.count / 4));
            assert!(seen.iter().any(|&k| k >= space.count * 3 / 4));
        }
    }

    #[test]
    fn ws_and_rangehot_skews() {
        let mut p = params(Workload::Ws1, 100_000, 1);
        p.ops = 100_000;
        let hot = all_ops(&p)
            .iter()
            .filter(|op| matches!(op, Op::Get(k) | Op::Put(k) if *k < 1000))
            .count();
        assert!((hot as f64 / 100_000.0 - 0.99).abs() < 0.01);
        let mut p = params(Workload::RangeHot, 100_000, 1);
        p.read_ratio = 1.0;
        p.scan_length = Some(10);
        let ops = all_ops(&p);
        let (start, len) = (42_500, 15_000);
        let in_hot = ops
            .iter()
            .filter(|op| matches!(op, Op::Scan(k, 10) if (start..start + len).contains(k)))
            .count();
        assert!((in_hot as f64 / ops.len() as f64 - 0.98).abs() < 0.01);
    }
}
