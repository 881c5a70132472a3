//! Model-based randomized test: random operation sequences checked against a
//! `BTreeMap`, on the real file system and on `FaultFs`.
//!
//! Reproduce one case with `THICKET_MODEL_SEED=<seed>` (and optionally
//! `THICKET_MODEL_OPS=<n>`).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use thicketdb::check::check_ordered_store;
use thicketdb::io::fault::FaultFs;
use thicketdb::io::PosixFs;
use thicketdb::{
    Db, DbIterator, Durability, KeyOrder, Keyspace, Layout, Options, Profile, ReadOptions,
    Snapshot, Stats, WriteBatch, WriteOptions, DEFAULT_KEYSPACE_NAME,
};

const KEYS: usize = 200;
const MAX_SNAPSHOTS: usize = 4;

enum Backend {
    Posix(tempfile::TempDir),
    Fault(FaultFs),
}

/// What a run exercises.
#[derive(Clone)]
struct Config {
    options: Options,
    /// Whether `compact_range` is among the operations.
    manual_compaction: bool,
    /// Whether bursts of puts (several memtables back to back) are among
    /// the operations, so that levels fill while compactions run.
    write_bursts: bool,
    /// Whether keyspaces are created (each with a random profile's options),
    /// dropped, switched between and written by cross-keyspace batches.
    keyspaces: bool,
}

/// Background flushes and L0 compactions, no manual compaction.
fn background_compaction() -> Config {
    Config {
        options: small_options(),
        manual_compaction: false,
        write_bursts: false,
        keyspaces: false,
    }
}

/// Manual compactions; L0 is never compacted in the background, so that a
/// manual compaction cannot race a background one (see
/// `manual_compaction_racing_background_compaction` in `api.rs`).
fn manual_compaction() -> Config {
    Config {
        options: small_options()
            .l0_compaction_trigger(1000)
            .l0_slowdown_writes_trigger(1000)
            .l0_stop_writes_trigger(1000),
        manual_compaction: true,
        write_bursts: false,
        keyspaces: false,
    }
}

/// Both at once.
fn all_compactions() -> Config {
    Config {
        options: small_options(),
        manual_compaction: true,
        write_bursts: false,
        keyspaces: false,
    }
}

impl Backend {
    fn open(&self, options: &Options) -> Db {
        match self {
            Backend::Posix(dir) => Db::open(dir.path(), options.clone()).unwrap(),
            Backend::Fault(fs) => open_fault(fs, options.clone()).unwrap(),
        }
    }

    fn check(&self, order: &KeyOrder) {
        let report = match self {
            Backend::Posix(dir) => {
                check_ordered_store(dir.path(), Arc::new(PosixFs), order.clone())
            }
            Backend::Fault(fs) => {
                check_ordered_store(&fault_dir(), Arc::new(fs.clone()), order.clone())
            }
        };
        if let Err(e) = report {
            panic!("check_store on a cleanly closed store: {e}");
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Backend::Posix(_) => "posix",
            Backend::Fault(_) => "faultfs",
        }
    }
}

struct Harness {
    rng: StdRng,
    config: Config,
    backend: Backend,
    db: Option<Db>,
    keys: Vec<Vec<u8>>,
    /// The model of the keyspace operations work on (`current`).
    model: Model,
    /// The keyspace operations work on, and its handle.
    current: String,
    ks: Option<Keyspace>,
    /// The models of the other keyspaces, by name.
    parked: BTreeMap<String, Model>,
    /// Keyspaces created so far (names are never reused, so a model is
    /// never confused with a dropped keyspace's).
    created: u32,
    /// Keyspaces dropped and cross-keyspace batches written.
    dropped: u32,
    cross_batches: u32,
    snapshots: Vec<(Snapshot, Model)>,
    /// An iterator created earlier and the state it must show.
    old_iter: Option<(DbIterator, Entries)>,
    writes: u64,
    base: String,
    ctx: String,
    reopens: u32,
    power_losses: u32,
}

fn random_keys(rng: &mut StdRng) -> Vec<Vec<u8>> {
    // A small alphabet so keys share prefixes; 0x00 and 0xff test byte order.
    const ALPHABET: &[u8] = b"\x00abc\xff";
    let mut keys = BTreeSet::new();
    keys.insert(Vec::new());
    while keys.len() < KEYS {
        let len = match rng.random_range(0..10) {
            0 => rng.random_range(1..4),
            1 => rng.random_range(20..80),
            _ => rng.random_range(4..12),
        };
        let k: Vec<u8> = (0..len)
            .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())])
            .collect();
        keys.insert(k);
    }
    keys.into_iter().collect()
}

impl Harness {
    fn new(seed: u64, backend: Backend, config: Config) -> Harness {
        let mut rng = StdRng::seed_from_u64(seed);
        let keys = random_keys(&mut rng);
        let db = backend.open(&config.options);
        let ks = db.keyspace(DEFAULT_KEYSPACE_NAME).unwrap();
        Harness {
            rng,
            config,
            base: format!("{} seed {seed}", backend.name()),
            ctx: format!("{} seed {seed}", backend.name()),
            backend,
            db: Some(db),
            keys,
            model: Model::new(),
            current: DEFAULT_KEYSPACE_NAME.to_string(),
            ks: Some(ks),
            parked: BTreeMap::new(),
            created: 0,
            dropped: 0,
            cross_batches: 0,
            snapshots: Vec::new(),
            old_iter: None,
            writes: 0,
            reopens: 0,
            power_losses: 0,
        }
    }

    fn db(&self) -> &Db {
        self.db.as_ref().unwrap()
    }

    /// The keyspace operations work on.
    fn ks(&self) -> &Keyspace {
        self.ks.as_ref().unwrap()
    }

    fn key(&mut self) -> Vec<u8> {
        let i = self.rng.random_range(0..self.keys.len());
        self.keys[i].clone()
    }

    /// A key or an arbitrary byte string (mostly between the stored keys).
    fn probe(&mut self) -> Vec<u8> {
        let mut k = self.key();
        match self.rng.random_range(0..4) {
            0 => k.push(self.rng.random()),
            1 => {
                k.pop();
            }
            _ => {}
        }
        k
    }

    fn value(&mut self) -> Vec<u8> {
        self.writes += 1;
        let len = match self.rng.random_range(0..10) {
            0 => self.rng.random_range(1000..5000),
            1 | 2 => self.rng.random_range(0..16),
            _ => self.rng.random_range(0..300),
        };
        // Each write's value is unique (when long enough) so stale data shows.
        let tag = self.writes.to_le_bytes();
        (0..len)
            .map(|i| tag[i % 8] ^ (i / 8) as u8)
            .collect::<Vec<u8>>()
    }

    fn write_options(&mut self) -> WriteOptions {
        WriteOptions {
            sync: self.rng.random_bool(0.05),
        }
    }

    fn step(&mut self, step: usize) {
        self.ctx = format!("{} step {step}", self.base);
        match self.rng.random_range(0..1000) {
            0..300 => {
                let (k, v, o) = (self.key(), self.value(), self.write_options());
                self.ks().put_opt(&k, &v, o).unwrap();
                self.model.insert(k, v);
            }
            300..400 => {
                let (k, o) = (self.key(), self.write_options());
                self.ks().delete_opt(&k, o).unwrap();
                self.model.remove(&k);
            }
            400..480 => {
                let n = self.rng.random_range(0..12);
                let mut ops = Vec::new();
                for _ in 0..n {
                    let k = self.key();
                    let v = if self.rng.random_bool(0.7) {
                        Some(self.value())
                    } else {
                        None
                    };
                    ops.push((k, v));
                }
                let o = self.write_options();
                let mut batch = WriteBatch::new();
                add_ops(&mut batch, self.ks(), &ops);
                self.db().write_opt(batch, o).unwrap();
                apply(&mut self.model, &ops);
            }
            480..640 => self.check_get(),
            640..660 => {
                if self.snapshots.len() < MAX_SNAPSHOTS {
                    let snap = self.db().snapshot();
                    self.snapshots.push((snap, self.model.clone()));
                }
            }
            660..680 => {
                if !self.snapshots.is_empty() {
                    let i = self.rng.random_range(0..self.snapshots.len());
                    self.snapshots.swap_remove(i);
                }
            }
            680..800 => self.check_iter(),
            800..815 => {
                if let Some((mut it, want)) = self.old_iter.take() {
                    it.seek_to_first();
                    let (got, status) = drain(&mut it, true);
                    status.unwrap();
                    assert!(
                        got == want,
                        "{}: old iterator: {}",
                        self.ctx,
                        vs(&got, &want)
                    );
                } else {
                    let it = self.ks().iter(ReadOptions::default()).unwrap();
                    let mut want = model_vec(&self.model);
                    let order = &self.config.options.comparator;
                    want.sort_by(|a, b| order.user(&a.0, &b.0));
                    self.old_iter = Some((it, want));
                }
            }
            815..830 => self.db().flush().unwrap(),
            830..840 if self.config.manual_compaction => {
                let (a, b) = (self.key(), self.key());
                let (start, end) = match self.rng.random_range(0..4) {
                    0 => (None, None),
                    1 => (Some(a.min(b.clone())), None),
                    2 => (None, Some(a.max(b))),
                    // Sometimes an empty (inverted) range.
                    _ => (Some(a), Some(b)),
                };
                self.ks()
                    .compact_range(start.as_deref(), end.as_deref())
                    .unwrap();
            }
            840..845 => self.reopen(),
            855..885 => self.delete_range(),
            845..855 if self.config.write_bursts => {
                for _ in 0..self.rng.random_range(200..600) {
                    let (k, v) = (self.key(), self.value());
                    self.ks().put(&k, &v).unwrap();
                    self.model.insert(k, v);
                }
            }
            885..905 if self.config.keyspaces => self.keyspace_step(),
            _ => self.check_get(),
        }
    }

    /// Creates, drops or switches to a keyspace, or writes one batch across
    /// several.
    fn keyspace_step(&mut self) {
        match self.rng.random_range(0..10) {
            0..2 if self.parked.len() + 1 < 4 => {
                self.created += 1;
                let name = format!("ks{}", self.created);
                // The layout is the store's: any profile of it, but for
                // an LSbM keyspace in a TRIAD-LOG store (refused: its
                // buffer would keep log tables).
                let store = &self.config.options;
                let profiles: Vec<Profile> = Profile::ALL
                    .iter()
                    .copied()
                    .filter(|p| p.options().layout == store.layout)
                    .filter(|p| !(p.options().lsbm_buffer && store.triad_log))
                    .collect();
                let profile = profiles[self.rng.random_range(0..profiles.len())];
                let options = small_chunks(profile_config(profile)).options;
                self.db().create_keyspace(&name, options).unwrap();
                self.parked.insert(name, Model::new());
            }
            2 => {
                let names: Vec<String> = self
                    .parked
                    .keys()
                    .chain([&self.current])
                    .filter(|n| *n != DEFAULT_KEYSPACE_NAME)
                    .cloned()
                    .collect();
                if names.is_empty() {
                    return;
                }
                let name = &names[self.rng.random_range(0..names.len())];
                if *name == self.current {
                    self.switch_to(DEFAULT_KEYSPACE_NAME);
                }
                self.db().drop_keyspace(name).unwrap();
                self.parked.remove(name);
                self.dropped += 1;
                let gone = self.db().keyspace(name);
                assert!(
                    matches!(gone, Err(thicketdb::Error::KeyspaceNotFound(_))),
                    "{}: dropped keyspace {name} still there",
                    self.ctx
                );
            }
            3..6 => {
                let mut names: Vec<String> = self.parked.keys().cloned().collect();
                names.push(DEFAULT_KEYSPACE_NAME.to_string());
                let name = names[self.rng.random_range(0..names.len())].clone();
                self.switch_to(&name);
            }
            _ => self.cross_keyspace_batch(),
        }
    }

    /// Makes `name` the keyspace operations work on. Snapshots and the old
    /// iterator hold one keyspace's state, so they go.
    fn switch_to(&mut self, name: &str) {
        if name == self.current {
            return;
        }
        self.snapshots.clear();
        self.old_iter = None;
        let model = self
            .parked
            .remove(name)
            .expect("switching to a known keyspace");
        let old = std::mem::replace(&mut self.model, model);
        let old_name = std::mem::replace(&mut self.current, name.to_string());
        self.parked.insert(old_name, old);
        self.ks = Some(self.db().keyspace(name).unwrap());
    }

    /// One batch with ops in the current keyspace and every other one.
    fn cross_keyspace_batch(&mut self) {
        let mut batch = WriteBatch::new();
        let mut per_space: Vec<(String, Vec<Op>)> = Vec::new();
        let names: Vec<String> = std::iter::once(self.current.clone())
            .chain(self.parked.keys().cloned())
            .collect();
        for name in names {
            let ops: Vec<Op> = (0..self.rng.random_range(1..5))
                .map(|_| {
                    let k = self.key();
                    let v = self.rng.random_bool(0.8).then(|| self.value());
                    (k, v)
                })
                .collect();
            add_ops(&mut batch, &self.db().keyspace(&name).unwrap(), &ops);
            per_space.push((name, ops));
        }
        let o = self.write_options();
        self.db().write_opt(batch, o).unwrap();
        self.cross_batches += u32::from(per_space.len() > 1);
        for (name, ops) in per_space {
            match self.parked.get_mut(&name) {
                Some(model) => apply(model, &ops),
                None => apply(&mut self.model, &ops),
            }
        }
    }

    /// A range `[start, end)` between two probes, mostly a few keys wide,
    /// sometimes wide or empty (inverted); now and then inside a batch,
    /// with puts before (deleted) and after (kept) it.
    fn range(&mut self) -> (Vec<u8>, Vec<u8>) {
        let i = self.rng.random_range(0..self.keys.len());
        let span = match self.rng.random_range(0..10) {
            0 => self.keys.len(),
            _ => self.rng.random_range(0..16),
        };
        let j = (i + span).min(self.keys.len() - 1);
        let (mut start, mut end) = (self.keys[i].clone(), self.keys[j].clone());
        if self.rng.random_bool(0.2) {
            start.push(self.rng.random());
        }
        if self.rng.random_bool(0.2) {
            end.push(self.rng.random());
        }
        if self.rng.random_bool(0.05) {
            std::mem::swap(&mut start, &mut end);
        }
        (start, end)
    }

    fn delete_range(&mut self) {
        let (start, end) = self.range();
        let o = self.write_options();
        if !self.config.options.comparator.is_bytewise() {
            let refused = self.ks().delete_range_opt(&start, &end, o);
            assert!(
                matches!(refused, Err(thicketdb::Error::InvalidArgument(_))),
                "{}: a custom comparator refuses range deletes: {refused:?}",
                self.ctx
            );
            return;
        }
        let in_range = |k: &Vec<u8>| start <= *k && *k < end;
        if self.rng.random_bool(0.7) {
            self.ks().delete_range_opt(&start, &end, o).unwrap();
            self.model.retain(|k, _| !in_range(k));
            return;
        }
        let (before, after) = (self.key(), self.key());
        let (v1, v2) = (self.value(), self.value());
        let mut batch = WriteBatch::new();
        batch.put_in(self.ks(), &before, &v1).unwrap();
        batch.delete_range_in(self.ks(), &start, &end).unwrap();
        batch.put_in(self.ks(), &after, &v2).unwrap();
        self.db().write_opt(batch, o).unwrap();
        self.model.insert(before, v1);
        self.model.retain(|k, _| !in_range(k));
        self.model.insert(after, v2);
    }

    fn check_get(&mut self) {
        let k = self.probe();
        let got = self.ks().get(&k).unwrap();
        assert_eq!(
            got.as_ref(),
            self.model.get(&k),
            "{}: get {}",
            self.ctx,
            show(&k)
        );
        if !self.snapshots.is_empty() {
            let i = self.rng.random_range(0..self.snapshots.len());
            let (snap, want) = &self.snapshots[i];
            let opts = ReadOptions {
                snapshot: Some(snap.clone()),
                fill_cache: self.rng.random_bool(0.5),
                ..ReadOptions::default()
            };
            let got = self.ks().get_opt(&k, &opts).unwrap();
            assert_eq!(
                got.as_ref(),
                want.get(&k),
                "{}: get {} in snapshot {i} (seq {})",
                self.ctx,
                show(&k),
                snap.sequence()
            );
        }
    }

    fn bound(&mut self) -> Option<Vec<u8>> {
        if self.rng.random_bool(0.5) {
            None
        } else {
            Some(self.probe())
        }
    }

    fn check_iter(&mut self) {
        let lower = self.bound();
        let upper = self.bound();
        let (snapshot, state) = if !self.snapshots.is_empty() && self.rng.random_bool(0.3) {
            let i = self.rng.random_range(0..self.snapshots.len());
            let (s, m) = &self.snapshots[i];
            (Some(s.clone()), m)
        } else {
            (None, &self.model)
        };
        let order = self.config.options.comparator.clone();
        let mut want: Entries = state
            .iter()
            .filter(|(k, _)| lower.as_ref().is_none_or(|l| !order.lt(k, l)))
            .filter(|(k, _)| upper.as_ref().is_none_or(|u| order.lt(k, u)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        want.sort_by(|a, b| order.user(&a.0, &b.0));
        let ctx = format!(
            "{}: iter lower {:?} upper {:?} snapshot {:?}",
            self.ctx,
            lower.as_deref().map(show),
            upper.as_deref().map(show),
            snapshot.as_ref().map(|s| s.sequence())
        );
        let opts = ReadOptions {
            snapshot,
            lower_bound: lower,
            upper_bound: upper,
            fill_cache: self.rng.random_bool(0.5),
        };
        let mut it = self.ks().iter(opts).unwrap();
        match self.rng.random_range(0..3) {
            0 => {
                it.seek_to_first();
                let (got, status) = drain(&mut it, true);
                status.unwrap();
                assert!(got == want, "{ctx} forward: {}", vs(&got, &want));
            }
            1 => {
                it.seek_to_last();
                let (mut got, status) = drain(&mut it, false);
                status.unwrap();
                got.reverse();
                assert!(got == want, "{ctx} reverse: {}", vs(&got, &want));
            }
            _ => {
                let target = self.probe();
                it.seek(&target);
                let mut pos = want.partition_point(|(k, _)| order.lt(k, &target));
                let mut trace = format!("seek {}", show(&target));
                for _ in 0..40 {
                    if pos < want.len() {
                        assert!(it.valid(), "{ctx} {trace}: want {}", show(&want[pos].0));
                        assert!(
                            it.key() == want[pos].0 && it.value() == want[pos].1,
                            "{ctx} {trace}: got key {} want {}",
                            show(it.key()),
                            show(&want[pos].0)
                        );
                        if self.rng.random_bool(0.5) {
                            it.next();
                            pos += 1;
                            trace.push_str(" next");
                        } else {
                            it.prev();
                            pos = pos.checked_sub(1).unwrap_or(want.len());
                            trace.push_str(" prev");
                        }
                    } else {
                        assert!(
                            !it.valid(),
                            "{ctx} {trace}: got key {}, want end",
                            show(it.key())
                        );
                        it.status().unwrap();
                        if self.rng.random_bool(0.5) {
                            it.seek_to_first();
                            pos = 0;
                            trace.push_str(" first");
                        } else {
                            it.seek_to_last();
                            pos = want.len().saturating_sub(1);
                            trace.push_str(" last");
                        }
                    }
                }
                it.status().unwrap();
            }
        }
    }

    fn chunked(&self) -> bool {
        self.config.options.layout == Layout::Chunked
    }

    fn reopen(&mut self) {
        self.snapshots.clear();
        self.old_iter = None;
        self.ks = None;
        let db = self.db.take().unwrap();
        let mut lost_tail = None;
        // Drawn before the match, which borrows the backend.
        let tail: Vec<Op> = (0..self.rng.random_range(0..24))
            .map(|_| {
                let k = self.key();
                (k, self.rng.random_bool(0.8).then(|| self.value()))
            })
            .collect();
        // Under `durability=async` a reopen without `close` returns to the
        // last checkpoint: only writes before a `sync_log` are certain.
        let asynchronous = self.config.options.durability == Durability::Async;
        let write_tail = |db: &Db| {
            db.sync_log().unwrap();
            let ks = db.keyspace(&self.current).unwrap();
            let unsynced = WriteOptions { sync: false };
            for (k, v) in &tail {
                match v {
                    Some(v) => ks.put_opt(k, v, unsynced).unwrap(),
                    None => ks.delete_opt(k, unsynced).unwrap(),
                }
            }
        };
        match (self.rng.random_range(0..4), &self.backend) {
            (0, _) => {
                db.close().unwrap();
                self.backend.check(&self.config.options.comparator);
            }
            // A process crash keeps every acknowledged write (under
            // `async`, those before the last checkpoint).
            (1, Backend::Fault(fs)) => {
                if asynchronous {
                    write_tail(&db);
                    lost_tail = Some(tail);
                }
                fs.crash_process();
                drop(db);
            }
            // A power loss keeps every write before the `sync_log` and a
            // prefix of the unsynced ones after it.
            (2, Backend::Fault(fs)) => {
                write_tail(&db);
                fs.drop_unsynced();
                drop(db);
                self.power_losses += 1;
                lost_tail = Some(tail);
            }
            _ => {
                if asynchronous {
                    write_tail(&db);
                    lost_tail = Some(tail);
                }
                drop(db)
            }
        }
        self.reopens += 1;
        self.ks = None;
        self.db = Some(self.backend.open(&self.config.options));
        self.ks = Some(self.db().keyspace(&self.current).unwrap());
        if let Some(tail) = lost_tail {
            self.adopt_surviving_prefix(&tail);
        }
        self.check_all("after reopen");
    }

    /// After a power loss (or, under `async`, any reopen without `close`):
    /// the current keyspace must hold its model plus some prefix of `tail`
    /// (the writes after the last sync); the model becomes that state.
    fn adopt_surviving_prefix(&mut self, tail: &[Op]) {
        let mut it = self.ks().iter(ReadOptions::default()).unwrap();
        it.seek_to_first();
        let (scanned, status) = drain(&mut it, true);
        status.unwrap();
        let got: Model = scanned.into_iter().collect();
        let mut candidate = self.model.clone();
        for n in 0..=tail.len() {
            if n > 0 {
                apply(&mut candidate, &tail[n - 1..n]);
            }
            if candidate == got {
                self.model = candidate;
                return;
            }
        }
        panic!(
            "{} after a power loss: keyspace {} is no prefix of the {} unsynced writes after \
             sync_log; against the synced state: {}",
            self.ctx,
            self.current,
            tail.len(),
            diff(&got, &self.model)
        );
    }

    /// Every keyspace against its model, and the set of keyspaces.
    fn check_all(&self, what: &str) {
        let mut names = self.db().list_keyspaces();
        names.sort_unstable();
        let mut want: Vec<&String> = self.parked.keys().chain([&self.current]).collect();
        want.sort_unstable();
        assert_eq!(
            names.iter().collect::<Vec<_>>(),
            want,
            "{} {what}",
            self.ctx
        );
        let spaces = self.parked.iter().chain([(&self.current, &self.model)]);
        let order = &self.config.options.comparator;
        for (name, model) in spaces {
            let ks = self.db().keyspace(name).unwrap();
            let mut it = ks.iter(ReadOptions::default()).unwrap();
            it.seek_to_first();
            let (scanned, status) = drain(&mut it, true);
            status.unwrap();
            assert!(
                scanned.windows(2).all(|w| order.lt(&w[0].0, &w[1].0)),
                "{} {what}: a scan of keyspace {name} is not in {order:?}",
                self.ctx
            );
            let got: Model = scanned.into_iter().collect();
            assert!(
                got == *model,
                "{} {what}: keyspace {name}: {}",
                self.ctx,
                diff(&got, model)
            );
        }
    }
}

/// Adds `ops` to `batch`, in keyspace `ks`.
fn add_ops(batch: &mut WriteBatch, ks: &Keyspace, ops: &[Op]) {
    for (k, v) in ops {
        match v {
            Some(v) => batch.put_in(ks, k, v).unwrap(),
            None => batch.delete_in(ks, k).unwrap(),
        }
    }
}

fn vs(got: &Entries, want: &Entries) -> String {
    let got_keys: Vec<String> = got.iter().map(|(k, _)| show(k)).collect();
    let want_keys: Vec<String> = want.iter().map(|(k, _)| show(k)).collect();
    if got_keys == want_keys {
        "same keys, different values".to_string()
    } else {
        format!("got keys {got_keys:?}\nwant keys {want_keys:?}")
    }
}

/// Runs `ops` random operations and checks the store against the model;
/// returns the stats taken before the final reopen.
fn run(seed: u64, ops: usize, backend: Backend, config: Config) -> Stats {
    let mut h = Harness::new(seed, backend, config);
    for step in 0..ops {
        h.step(step);
    }
    h.snapshots.clear();
    h.old_iter = None;
    h.check_all("at the end");
    let stats = h.db().stats();
    assert_eq!(stats.background_error, None, "{}", h.ctx);
    if h.config.manual_compaction {
        h.db().compact_range(None, None).unwrap();
        h.check_all("after a full compaction");
    }
    h.reopen();
    if h.chunked() {
        assert!(
            stats.chunk_splits > 0 && stats.chunk_funk_rebalances > stats.chunk_splits,
            "{}: no split or rebalance happened: {stats:?}",
            h.ctx
        );
        if h.config.options.munk_cache_bytes > 0 {
            assert!(
                stats.chunk_munk_loads > 0 && stats.chunk_gets_from_row_cache > 0,
                "{}: no munk or row cache was used: {stats:?}",
                h.ctx
            );
        }
    } else {
        assert!(stats.flushes > 0, "{}: no flush happened: {stats:?}", h.ctx);
        assert!(
            stats.compactions_merge + stats.compactions_move > 0,
            "{}: no compaction happened: {stats:?}",
            h.ctx
        );
    }
    assert!(h.reopens > 0);
    if h.config.keyspaces {
        assert!(
            h.created > 0 && h.dropped > 0 && h.cross_batches > 0,
            "{}: {} keyspaces created, {} dropped, {} cross-keyspace batches",
            h.ctx,
            h.created,
            h.dropped,
            h.cross_batches
        );
    }
    eprintln!(
        "{}: {} writes, {} reopens ({} after a power loss), {} flushes, {} merge compactions, {} moves, {} started beside another",
        h.base,
        h.writes,
        h.reopens,
        h.power_losses,
        stats.flushes,
        stats.compactions_merge,
        stats.compactions_move,
        stats.compactions_concurrent
    );
    stats
}

fn seeds(default: &[u64]) -> Vec<u64> {
    match std::env::var("THICKET_MODEL_SEED") {
        Ok(s) => vec![s.parse().expect("THICKET_MODEL_SEED must be a number")],
        Err(_) => default.to_vec(),
    }
}

fn ops(default: usize) -> usize {
    std::env::var("THICKET_MODEL_OPS")
        .map(|s| s.parse().expect("THICKET_MODEL_OPS must be a number"))
        .unwrap_or(default)
}

const OPS: usize = 6000;

fn posix() -> Backend {
    Backend::Posix(tempfile::tempdir().unwrap())
}

fn fault() -> Backend {
    Backend::Fault(FaultFs::new())
}

#[test]
fn model_posix_background_compaction() {
    for seed in seeds(&[1, 2, 3]) {
        run(seed, ops(OPS), posix(), background_compaction());
    }
}

#[test]
fn model_posix_manual_compaction() {
    for seed in seeds(&[4, 5, 6]) {
        run(seed, ops(OPS), posix(), manual_compaction());
    }
}

#[test]
fn model_faultfs_background_compaction() {
    for seed in seeds(&[101, 102, 103]) {
        run(seed, ops(OPS), fault(), background_compaction());
    }
}

#[test]
fn model_faultfs_manual_compaction() {
    for seed in seeds(&[104, 105, 106]) {
        run(seed, ops(OPS), fault(), manual_compaction());
    }
}

#[test]
fn model_all_compactions() {
    for seed in seeds(&[201, 202]) {
        run(seed, ops(OPS), posix(), all_compactions());
        run(seed, ops(OPS), fault(), all_compactions());
    }
}

/// `default` with level sizing derived from its 64 KiB memtables
/// (`level_sizing_from_memtable`): a base-level ceiling of two memtables
/// (multiplier 2) that the store outgrows, L0 counts raised to 20/36
/// that write bursts fill, background and manual compactions, process
/// crashes on `FaultFs`.
#[test]
fn model_level_sizing_from_memtable() {
    let options = small_options()
        .target_table_size(8 << 10)
        .level_size_multiplier(2);
    assert!(options.level_sizing_from_memtable);
    assert_eq!(options.level_base_bytes(), 128 << 10);
    assert_eq!(options.l0_stall_triggers(), (20, 36));
    let config = Config {
        options,
        manual_compaction: true,
        write_bursts: true,
        keyspaces: false,
    };
    for seed in seeds(&[401, 402]) {
        run(seed, ops(OPS), fault(), config.clone());
    }
}

/// Every profile's options, shrunk so that flushes, multi-level
/// compactions, group compactions and moves all happen in a short run.
fn profile_config(profile: Profile) -> Config {
    Config {
        options: tiny_tree(profile.options(), 32 << 10)
            .level_size_multiplier(2)
            // LSbM: trim after every compaction.
            .lsbm_trim_interval(0),
        manual_compaction: true,
        write_bursts: false,
        keyspaces: false,
    }
}

/// The chunked layout's limits shrunk so that splits, funk and munk
/// rebalances, munk loads and evictions and row cache turnover happen all
/// the time (the LSM ignores them).
fn small_chunks(mut config: Config) -> Config {
    let o = &mut config.options;
    o.chunk_size = 8 << 10;
    o.funk_log_limit = 2 << 10;
    o.funk_log_limit_with_munk = 4 << 10;
    o.log_filter_parts = 4;
    o.munk_cache_bytes = 24 << 10;
    o.row_cache_bytes = 4 << 10;
    config
}

/// The counters that show `profile`'s own techniques acted in a run (and
/// that the LevelDB baseline used none of BoLT's).
fn techniques_acted(profile: Profile, stats: &Stats) -> Vec<(&'static str, bool)> {
    let bolt_files = [
        (
            "compaction files released by hole punching",
            stats.holes_punched > 0,
        ),
        ("dead segments deleted", stats.segments_deleted > 0),
    ];
    let bolt = [
        bolt_files.as_slice(),
        &[
            ("settled promotions", stats.tables_settled > 0),
            ("group compactions", stats.compactions_grouped > 0),
        ],
    ]
    .concat();
    // Parallel search is not among them: whether a lookup fans out
    // depends on how many runs it meets, which a short history need not
    // reach (`model_sifr_early_cleaning` and `tests/range_delete.rs`
    // check it on stores built for it).
    let sifr = [("journaled merge checkpoints", stats.merge_checkpoints > 0)];
    match profile {
        Profile::Default | Profile::Bolt => bolt,
        Profile::Sifr => sifr.to_vec(),
        // A forest: BoLT's files, not its leveled picks.
        Profile::SifrBolt => [sifr.as_slice(), bolt_files.as_slice()].concat(),
        Profile::Lsbm => vec![("buffer tables removed", stats.buffer_tables_removed > 0)],
        Profile::Triad => vec![
            ("TRIAD-LOG log tables", stats.log_table_bytes > 0),
            ("TRIAD-MEM hot entries kept", stats.hot_entries_kept > 0),
        ],
        Profile::YoDb => vec![("chunk splits", stats.chunk_splits > 0)],
        // The baseline BoLT is measured against must not do BoLT's picks.
        Profile::LevelDb => vec![
            ("no settled promotion", stats.tables_settled == 0),
            ("no group compaction", stats.compactions_grouped == 0),
        ],
        Profile::SizeTiered => Vec::new(),
    }
}

#[test]
fn model_every_profile() {
    for &profile in Profile::ALL {
        for seed in seeds(&[301, 302]) {
            let stats = run(
                seed,
                ops(OPS),
                fault(),
                small_chunks(profile_config(profile)),
            );
            // A cut-down history (`THICKET_MODEL_OPS`, the debug job's)
            // need not grow a tree where every technique acts.
            if ops(OPS) < OPS {
                continue;
            }
            let idle: Vec<&str> = techniques_acted(profile, &stats)
                .into_iter()
                .filter(|(_, acted)| !acted)
                .map(|(what, _)| what)
                .collect();
            assert!(idle.is_empty(), "{profile} seed {seed}: not so: {idle:?}");
        }
        run(
            303,
            ops(OPS),
            posix(),
            small_chunks(profile_config(profile)),
        );
    }
}

/// YoDB's asynchronous durability (`durability=async`): writes become
/// durable at checkpoints, so a power loss keeps the writes up to the
/// last one (`sync_log` waits for the next) and a prefix of the rest.
#[test]
fn model_yodb_async_durability() {
    for seed in seeds(&[321, 322, 323]) {
        let mut config = small_chunks(profile_config(Profile::YoDb));
        config.options.durability = Durability::Async;
        run(seed, ops(OPS), fault(), config);
    }
}

/// YoDB without munks or row cache: every get and scan reads funks.
#[test]
fn model_yodb_without_caches() {
    for seed in seeds(&[311, 312]) {
        let mut config = small_chunks(profile_config(Profile::YoDb));
        config.options.munk_cache_bytes = 0;
        config.options.row_cache_bytes = 0;
        run(seed, ops(OPS), fault(), config);
    }
}

/// Writers that build funk rebalances themselves (no build thread,
/// `chunk_rebalance_threads=0`) under the same load.
#[test]
fn model_yodb_inline_rebalance() {
    for seed in seeds(&[315, 316]) {
        let mut config = small_chunks(profile_config(Profile::YoDb));
        config.options.chunk_rebalance_threads = 0;
        run(seed, ops(OPS), fault(), config);
    }
}

/// The paper's array-list munks (`munk_array_list`) under the same load.
#[test]
fn model_yodb_array_list_munks() {
    for seed in seeds(&[313, 314]) {
        let mut config = small_chunks(profile_config(Profile::YoDb));
        config.options.munk_array_list = true;
        run(seed, ops(OPS), fault(), config);
    }
}

/// Keys in reverse byte order: every comparison the engine makes (memtable,
/// table indexes and blocks, merges, run ranges, compaction overlaps,
/// iterator bounds) must go through the store's comparator, or gets miss
/// keys, scans come out of order, or compactions build unsorted tables.
#[test]
fn model_custom_comparator() {
    for profile in [
        Profile::Default,
        Profile::LevelDb,
        Profile::Sifr,
        Profile::Lsbm,
        Profile::Triad,
    ] {
        let mut config = profile_config(profile);
        config.options.comparator = thicketdb::KeyOrder::custom(Arc::new(ReverseBytes));
        run(601, ops(OPS), fault(), config.clone());
        run(602, ops(OPS), posix(), config);
    }
}

/// LSbM with tiny tables, a trim after every compaction and a block cache
/// far smaller than the data: tables enter the compaction buffer, leave it
/// by drain, trim and the space bound, and lookups are answered from it,
/// all while the model checks every read (stale versions included).
#[test]
fn model_lsbm_buffer() {
    let (mut hits, mut removed, mut range_pieces) = (0, 0, 0);
    for (seed, threads) in seeds(&[501, 502, 503]).into_iter().zip([1, 2, 1]) {
        let mut config = profile_config(Profile::Lsbm);
        // LevelDB's fixed targets (the profile's dynamic sizing:
        // `model_lsbm_buffer_on_dynamic_level_sizing`).
        config.options.dynamic_level_bytes = false;
        config.options.compaction_threads = threads;
        config.options.block_cache_size = 32 << 10;
        config.options.lsbm_trim_threshold = 0.5;
        config.options.lsbm_max_buffer_bytes = 96 << 10;
        // Range reads choosing by the cache, and (502) reading the buffer
        // wherever it may serve.
        config.options.lsbm_range_by_cache = seed != 502;
        let stats = run(seed, ops(OPS), posix(), config);
        hits += stats.buffer_hits;
        removed += stats.buffer_tables_removed;
        range_pieces += stats.buffer_range_pieces;
    }
    assert!(hits > 0, "no lookup was answered by the buffer");
    assert!(range_pieces > 0, "no iterator read the buffer");
    assert!(removed > 0, "no buffer table was ever removed");
}

/// `model_lsbm_buffer` on the profile's dynamic level sizing: L0 compacts
/// into a base level that moves as the store grows, whose buffer takes L0's tables;
/// every read is checked against the model (stale versions included), on
/// one and two compaction threads and across crashes (`FaultFs`). Seed
/// 506 on two threads returned deleted keys in 5 of 8 runs while L0's
/// tables could pass by an emptied level's buffer (505: about 1 in 15).
#[test]
fn model_lsbm_buffer_on_dynamic_level_sizing() {
    let (mut hits, mut removed) = (0, 0);
    for (seed, threads) in seeds(&[504, 505, 506]).into_iter().zip([1, 2, 2]) {
        let mut config = profile_config(Profile::Lsbm);
        config.options.compaction_threads = threads;
        config.options.block_cache_size = 32 << 10;
        config.options.lsbm_trim_threshold = 0.5;
        config.options.lsbm_max_buffer_bytes = 96 << 10;
        let backend = if threads == 1 { fault() } else { posix() };
        let stats = run(seed, ops(OPS), backend, config);
        hits += stats.buffer_hits;
        removed += stats.buffer_tables_removed;
    }
    assert!(hits > 0, "no lookup was answered by the buffer");
    assert!(removed > 0, "no buffer table was ever removed");
}

/// `profile_config` on several compaction threads, with write bursts and
/// (tiered) two runs per level, so that a burst fills L0 while a deeper
/// merge runs.
fn concurrent_config(profile: Profile) -> Config {
    let config = profile_config(profile);
    Config {
        options: config.options.compaction_threads(3).runs_per_level(2),
        write_bursts: true,
        ..config
    }
}

/// Keyspaces under every store profile, each created with a random
/// profile's options: created, dropped (a dropped keyspace never comes
/// back), switched between and written by cross-keyspace batches, across
/// crashes and reopens; every keyspace is checked against its model.
#[test]
fn model_keyspaces_under_every_profile() {
    for &profile in Profile::ALL {
        let mut config = small_chunks(profile_config(profile));
        config.keyspaces = true;
        for seed in seeds(&[801]) {
            run(seed, ops(OPS), fault(), config.clone());
        }
        run(802, ops(OPS), posix(), config);
    }
}

/// Leveled and tiered trees compacted by several threads, with manual
/// compactions in between; some tasks must really have run side by side.
#[test]
fn model_concurrent_compactions() {
    for profile in [Profile::Default, Profile::LevelDb, Profile::Sifr] {
        let mut concurrent = 0;
        for seed in seeds(&[401, 402]) {
            let stats = run(seed, ops(OPS), fault(), concurrent_config(profile));
            concurrent += stats.compactions_concurrent;
        }
        let stats = run(403, ops(OPS), posix(), concurrent_config(profile));
        concurrent += stats.compactions_concurrent;
        assert!(
            concurrent > 0,
            "{profile}: no compaction started beside another"
        );
    }
}

/// SifrDB's early cleaning under the model: merges checkpoint every two
/// tables while concurrent compactions, crashes and reopens go on, so reads
/// meet interim runs, straddling inputs and moves of unfinished merges.
/// Also SifrDB's parallel search: serial and on four threads, without
/// Bloom filters so that most lookups have several candidates.
#[test]
fn model_sifr_early_cleaning() {
    for threads in [1, 4] {
        let config = concurrent_config(Profile::Sifr);
        let config = Config {
            options: config
                .options
                .early_cleaning_threshold(2)
                .bloom_bits_per_key(0)
                .search_threads(threads)
                // Parallel lookups run only with direct reads (a block
                // cache miss is then a device read).
                .use_direct_reads(threads > 1),
            ..config
        };
        let (mut checkpoints, mut lookups) = (0, 0);
        // Seed 502 found moves hidden below the checkpoint key.
        for seed in seeds(&[502]) {
            let stats = run(seed, ops(OPS), fault(), config.clone());
            checkpoints += stats.merge_checkpoints;
            lookups += stats.search_lookups;
        }
        let stats = run(503, ops(OPS), posix(), config);
        checkpoints += stats.merge_checkpoints;
        lookups += stats.search_lookups;
        assert!(checkpoints > 0);
        assert_eq!(lookups > 0, threads > 1, "{threads} search threads");
    }
}

/// TRIAD's techniques one at a time on the `default` profile (the paper's
/// breakdown), and all three (`triad`): with TRIAD-LOG, flushes write log
/// tables whose values are read from the logs, across crashes, reopens,
/// recovery and compactions.
#[test]
fn model_triad_techniques_alone_and_together() {
    type Switch = fn(&mut Options);
    let alone: [(&str, Switch); 4] = [
        ("triad_mem", |o| o.triad_mem = true),
        ("triad_disk", |o| o.triad_disk = true),
        ("triad_log", |o| o.triad_log = true),
        // C_m updated in place, its log limited to two memtables (FLUSH_TH
        // deciding when it fills).
        ("triad_in_place", |o| {
            o.triad_in_place = true;
            o.triad_flush_threshold = 0.5;
            o.triad_log_limit = 2.0;
        }),
    ];
    for (name, switch) in alone {
        let mut config = profile_config(Profile::Default);
        switch(&mut config.options);
        let (mut log_table_bytes, mut in_place_updates) = (0, 0);
        for seed in seeds(&[701, 702]) {
            let stats = run(seed, ops(OPS), fault(), config.clone());
            log_table_bytes += stats.log_table_bytes;
            in_place_updates += stats.in_place_updates;
        }
        let stats = run(703, ops(OPS), posix(), config);
        log_table_bytes += stats.log_table_bytes;
        in_place_updates += stats.in_place_updates;
        assert_eq!(log_table_bytes > 0, name == "triad_log", "{name}");
        // A cut-down history (the debug job's) need not write a key twice
        // into one memtable: only the full one must update in place.
        match name {
            "triad_in_place" if ops(OPS) >= OPS => assert!(in_place_updates > 0, "{name}"),
            "triad_in_place" => {}
            _ => assert_eq!(in_place_updates, 0, "{name}"),
        }
    }
    let config = profile_config(Profile::Triad);
    assert!(
        config.options.triad_log,
        "the triad profile writes log tables"
    );
    let stats = run(704, ops(OPS), fault(), config);
    assert!(stats.log_table_bytes > 0);
}
