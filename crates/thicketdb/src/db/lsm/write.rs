//! The write path: group commit, memtable switching and write stalls.
//!
//! Writers queue up; the writer at the front becomes the leader, merges the
//! batches behind it into one log record, appends it with one `write` (and
//! at most one `fdatasync`), inserts the group into the memtable with
//! consecutive sequence numbers, publishes the last sequence and wakes the
//! followers.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::lock_order::RankedGuard;

use super::background_state::{set_background_error, wake_background};
use super::log_state::create_log;
use super::relog::location_in;
use super::tree::Tree;
use super::{DbInner, SuperVersion};
use crate::db::batch::{DecodedBatch, OpKind, WriteBatch};
use crate::db::call_options::WriteOptions;
use crate::error::{Error, Result};
use crate::log::LogWriter;
use crate::memtable::{InPlaceWrites, Memtable};
use crate::options::Options;
use crate::stats::Counters;
use crate::version::files::log_path;

/// A group stops growing at this many bytes (LevelDB's 1 MiB).
const MAX_GROUP_BYTES: usize = 1 << 20;

/// One writer waiting in the queue.
pub(crate) struct PendingWrite {
    batch: Option<WriteBatch>,
    sync: bool,
    result: Option<Result<()>>,
}

type Slot = Arc<parking_lot::Mutex<PendingWrite>>;

#[derive(Default)]
pub(crate) struct WriteState {
    queue: VecDeque<Slot>,
}

pub(crate) fn write(inner: &Arc<DbInner>, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
    inner.check_open()?;
    if batch.is_empty() {
        return Ok(());
    }
    let slot: Slot = Arc::new(parking_lot::Mutex::new(PendingWrite {
        batch: Some(batch),
        sync: opts.sync,
        result: None,
    }));
    let mut state = inner.write.lock();
    if let Some(result) = join_queue(inner, &mut state, &slot) {
        return result;
    }
    // This writer leads: it owns the front of the queue until it pops it.
    let outcome = lead(inner, &mut state);
    let group = match outcome {
        Ok(group) => group,
        Err(e) => {
            // Only the leader fails; followers retry under a new leader.
            state.queue.pop_front();
            inner.write_cv.notify_all();
            return Err(e);
        }
    };
    let mut result = Ok(());
    for _ in 0..group.len {
        let done = state.queue.pop_front().expect("group members are queued");
        if Arc::ptr_eq(&done, &slot) {
            result = group.result.clone();
        } else {
            done.lock().result = Some(group.result.clone());
        }
    }
    inner.write_cv.notify_all();
    result
}

/// Queues `slot` and waits until a leader has committed it (its result) or
/// it reaches the front (`None`): then the caller leads, and pops the front
/// when done. A slot without a batch is never grouped with others, so it
/// always reaches the front (how `flush` gets exclusive use of the queue).
fn join_queue(
    inner: &DbInner,
    state: &mut RankedGuard<'_, WriteState>,
    slot: &Slot,
) -> Option<Result<()>> {
    state.queue.push_back(slot.clone());
    // Adaptive yield (`write_thread_max_yield_micros`): the leader is
    // likely done within microseconds; yielding until then spares the
    // futex sleep and wake-up.
    let yield_for = Duration::from_micros(inner.options.write_thread_max_yield_micros);
    let yield_until = (!yield_for.is_zero()).then(|| Instant::now() + yield_for);
    loop {
        if let Some(result) = slot.lock().result.take() {
            return Some(result);
        }
        if state.queue.front().is_some_and(|f| Arc::ptr_eq(f, slot)) {
            return None;
        }
        if yield_until.is_some_and(|until| Instant::now() < until) {
            MutexGuard::unlocked(state.raw(), std::thread::yield_now);
            continue;
        }
        inner.write_cv.wait(state.raw());
    }
}

struct Group {
    len: usize,
    result: Result<()>,
}

/// Makes room, forms a group, and commits it. Called with the queue lock,
/// which is released while the log is written.
/// REQUIRES: `inner.write` held (as `state`) by the queue's front.
/// Takes `log` with `write` released; the queue's front alone appends.
fn lead(inner: &Arc<DbInner>, state: &mut RankedGuard<'_, WriteState>) -> Result<Group> {
    inner.check_background_error()?;
    make_room(inner, state, false)?;
    let (mut merged, len, sync) = form_group(state);
    let count = merged.len() as u64;
    let user_bytes = merged.user_bytes();
    let result = MutexGuard::unlocked(state.raw(), || {
        // The memtables the group writes to (a group of the default
        // keyspace alone reads one super version).
        let svs: Vec<(u32, Arc<SuperVersion>)> = match merged.default_keyspace_only() {
            true => vec![(inner.default.id, inner.default.super_version())],
            false => inner
                .trees()
                .iter()
                .map(|t| (t.id, t.super_version()))
                .collect(),
        };
        let mems: Vec<(u32, &Memtable)> = svs.iter().map(|(id, sv)| (*id, &*sv.mem)).collect();
        let first = inner.last_sequence.load(Ordering::Acquire) + 1;
        let mut log = inner.log.lock();
        // In-place updates (TRIAD's C_m): no snapshot or iterator is taken
        // from the first update until the group is published (then it sees
        // all of them), and versions a pinned one may read stay.
        let pins = mems
            .iter()
            .any(|(_, m)| m.updates_in_place())
            .then(|| inner.snapshots.hold());
        let record = merged.encode(first);
        let logged = log.writer.add_record(record).and_then(|offset| {
            log.writer.flush()?;
            if sync {
                let syncs = log.sync(inner.fs.as_ref(), &inner.dir)?;
                Counters::add(&inner.counters.fsyncs_log, syncs);
            }
            Ok(offset)
        });
        let offset = match logged {
            Ok(offset) => offset,
            Err(e) => {
                // The log may now hold a torn record: refuse further writes.
                set_background_error(inner, e.clone());
                return Err(e);
            }
        };
        Counters::add(&inner.counters.log_bytes_written, record.len() as u64 + 7);
        let mut in_place: Vec<InPlaceWrites> = match &pins {
            Some(pins) => mems
                .iter()
                .map(|(_, m)| m.in_place_writes(pins.newest()))
                .collect(),
            None => Vec::new(),
        };
        insert_into_memtables(&mems, record, offset, &mut in_place).map_err(|why| {
            Error::invariant(format!(
                "a batch this process encoded failed to decode: {why}"
            ))
        })?;
        inner
            .last_sequence
            .store(first + count - 1, Ordering::Release);
        // Lookups of the keys updated in place wait until here.
        let c = &inner.counters;
        for writes in in_place {
            Counters::add(&c.in_place_updates, writes.updated);
            Counters::add(&c.in_place_versions_kept, writes.kept);
        }
        drop(pins);
        Ok(())
    });
    if result.is_ok() {
        let c = &inner.counters;
        Counters::add(&c.user_bytes_written, user_bytes);
        Counters::add(&c.user_writes, count);
        Counters::add(&c.write_groups, 1);
    }
    Ok(Group { len, result })
}

/// Takes the leader's batch and merges followers' batches behind it.
/// REQUIRES: `inner.write` held (as `state`) by the queue's front.
fn form_group(state: &mut RankedGuard<'_, WriteState>) -> (WriteBatch, usize, bool) {
    let mut iter = state.queue.iter();
    let leader = iter.next().expect("leader is queued");
    let (mut merged, sync) = {
        let mut l = leader.lock();
        (l.batch.take().expect("leader batch present"), l.sync)
    };
    let mut len = 1;
    for follower in iter {
        let mut f = follower.lock();
        // A sync write never rides in a non-sync group: it would be
        // acknowledged without its fdatasync.
        if f.sync && !sync {
            break;
        }
        let Some(batch) = f.batch.as_ref() else { break };
        if merged.encoded_len() + batch.encoded_len() > MAX_GROUP_BYTES {
            break;
        }
        merged.append(batch);
        f.batch = None;
        len += 1;
    }
    (merged, len, sync)
}

/// Applies an encoded batch, the log record at `record_offset` of the
/// memtables' log, to the memtable of each op's keyspace in `mems` (an op
/// of a keyspace not there, dropped or already flushed past this log, is
/// skipped; it still takes its sequence number); returns the batch's last
/// sequence. A malformed batch is rejected before anything is inserted.
/// `in_place`: one group of in-place writes per memtable of `mems`, or
/// none (every write adds a version).
pub(crate) fn insert_into_memtables<'a>(
    mems: &[(u32, &'a Memtable)],
    record: &[u8],
    record_offset: u64,
    in_place: &mut [InPlaceWrites<'a>],
) -> std::result::Result<u64, String> {
    let batch = DecodedBatch::parse(record)?;
    batch.for_each(|_| ())?;
    let mut seq = batch.first_sequence;
    batch.for_each(|op| {
        if let Some(i) = mems.iter().position(|(id, _)| *id == op.keyspace) {
            let mem = mems[i].1;
            match op.kind {
                OpKind::Point(kind) => {
                    let at = location_in(record, record_offset, op.value);
                    match in_place.get_mut(i) {
                        Some(writes) => mem.add_in_place(seq, kind, op.key, op.value, at, writes),
                        None => mem.add_at(seq, kind, op.key, op.value, at),
                    }
                }
                OpKind::RangeDeletion => mem.add_range_deletion(seq, op.key, op.value),
            }
        }
        seq += 1;
    })?;
    Ok(seq.saturating_sub(1))
}

/// Ensures the memtable has room, switching it when full and stalling while
/// flushes or L0 compaction fall behind. `force` switches a non-empty
/// memtable regardless of size (for `flush`).
/// REQUIRES: `inner.write` held (as `state`) by the queue's front.
fn make_room(
    inner: &Arc<DbInner>,
    state: &mut RankedGuard<'_, WriteState>,
    force: bool,
) -> Result<()> {
    let mut slowed = false;
    loop {
        inner.check_background_error()?;
        inner.check_open()?;
        // Keyspaces share the log, so they switch memtables together, and
        // one keyspace's stall holds up every write.
        let svs: Vec<(Arc<Tree>, Arc<SuperVersion>)> = inner
            .trees()
            .iter()
            .map(|t| (t.clone(), t.super_version()))
            .collect();
        let room = |(t, sv): &(Arc<Tree>, Arc<SuperVersion>)| Room::of(&t.options, sv, force);
        let rooms: Vec<Room> = svs.iter().map(room).collect();
        if !slowed && rooms.iter().any(|r| r.slow) {
            // Delay each write a little rather than stopping all of them
            // later; this hands the CPU to compaction.
            slowed = true;
            let start = Instant::now();
            MutexGuard::unlocked(state.raw(), || std::thread::sleep(Duration::from_millis(1)));
            Counters::add(
                &inner.counters.stall_micros,
                start.elapsed().as_micros() as u64,
            );
            continue;
        }
        let memtable_full = rooms.iter().any(|r| r.full);
        // The log's own limit (TRIAD's Algorithm 1 flushes when the commit
        // log is full): with in-place updates it fills before the memtable.
        let log_full = !force && !memtable_full && log_full(inner);
        let switch = match force {
            true => svs.iter().any(|(_, sv)| !sv.mem.is_empty()),
            false => memtable_full || log_full,
        };
        if !switch {
            return Ok(());
        }
        if rooms.iter().any(|r| r.stop) {
            let start = Instant::now();
            wake_background(inner);
            inner
                .write_cv
                .wait_for(state.raw(), Duration::from_millis(100));
            Counters::add(
                &inner.counters.stall_micros,
                start.elapsed().as_micros() as u64,
            );
            continue;
        }
        if !force && super::log_rewrite::rewrite_small_log(inner, &svs)? {
            if log_full {
                Counters::add(&inner.counters.log_limit_rewrites, 1);
            }
            // No flush follows to delete the old log, unpinned with the old
            // memtable once readers let go of it: delete it now, with the
            // queue still ours but its mutex released for the file I/O.
            drop(svs);
            MutexGuard::unlocked(state.raw(), || {
                super::obsolete::collect_obsolete_files(inner)
            });
            return Ok(());
        }
        switch_memtable(inner)?;
        if log_full {
            Counters::add(&inner.counters.log_limit_switches, 1);
        }
        wake_background(inner);
        return Ok(());
    }
}

/// Whether the active log reached `triad_log_limit`.
/// REQUIRES: `inner.write` held by the queue's front. Takes `log`.
fn log_full(inner: &DbInner) -> bool {
    let opts = &inner.options;
    let limit = (opts.triad_log_limit * opts.write_buffer_size as f64) as u64;
    limit > 0 && inner.log.lock().writer.len() >= limit
}

/// What one keyspace's memtable and tree say about room for a write.
struct Room {
    /// Writes should slow down (L0 runs or pending compaction bytes).
    slow: bool,
    /// The memtable is full.
    full: bool,
    /// A switch must wait (too many immutable memtables or L0 runs, too
    /// many pending compaction bytes).
    stop: bool,
}

impl Room {
    fn of(opts: &Options, sv: &SuperVersion, force: bool) -> Room {
        let l0_runs = sv.version.levels[0].runs.len();
        let pending = sv.pending_compaction_bytes;
        let compacting = !opts.disable_auto_compactions;
        let (l0_slowdown, l0_stop) = opts.l0_stall_triggers();
        Room {
            slow: !force
                && compacting
                && (l0_runs >= l0_slowdown || pending >= opts.soft_pending_compaction_bytes),
            full: sv.mem.approximate_size() >= opts.write_buffer_size,
            stop: sv.imms.len() >= opts.max_immutable_memtables
                || (!force
                    && compacting
                    && (l0_runs >= l0_stop || pending >= opts.hard_pending_compaction_bytes)),
        }
    }
}

/// Starts a new log and, in every keyspace, a new memtable on it; each
/// non-empty old memtable becomes immutable (an empty one just goes), so
/// every memtable holds the writes of one log.
///
/// As LevelDB's switch, it syncs neither the old log nor the directory:
/// the next sync write does, before its own (`LogState::sync`), and the
/// flush that follows syncs the directory before its MANIFEST edit names
/// the new log. A store re-logging values or pointing tables into its logs
/// (TRIAD-MEM, FLUSH_TH, TRIAD-LOG in any keyspace), or with several
/// keyspaces, makes an old log's writes durable elsewhere without a sync
/// write: its flush syncs the switched-out logs first, with the log
/// released (`flush_sync.rs`), not this switch while every writer waits.
/// REQUIRES: `inner.write` held by the queue's front (no write group is
/// mid-commit). Takes `versions`, then `log`, then `super_version` (write).
pub(super) fn switch_memtable(inner: &Arc<DbInner>) -> Result<()> {
    let (number, live_from) = {
        let versions = inner.versions.lock();
        (versions.new_file_number(), versions.log_number())
    };
    // The old log is left unsynced whatever the options: a flush that
    // needs it durable (TRIAD, several keyspaces) syncs it first, off the
    // writers' path (`flush_sync.rs`).
    let path = log_path(&inner.dir, number);
    let file = match create_log(inner.fs.as_ref(), &inner.options, &path) {
        Ok(f) => f,
        Err(e) => {
            set_background_error(inner, e.clone());
            return Err(e);
        }
    };
    // The log writer and the memtables change together under `log`: whoever
    // holds it sees the memtables whose log it appends to (`relog`).
    let mut log = inner.log.lock();
    log.switch_unsynced(LogWriter::new(file), number, live_from);
    // Only the queue's front switches memtables, and flushes only remove
    // immutable memtables or replace the version, so building from the
    // current super version under its lock loses nothing.
    for tree in inner.trees().iter() {
        let mem = Arc::new(tree.memtable_on_log(&inner.backings, number));
        let mut current = tree.super_version.write();
        let mut imms = Vec::with_capacity(current.imms.len() + 1);
        if !current.mem.is_empty() {
            imms.push(current.mem.clone());
        }
        imms.extend(current.imms.iter().cloned());
        let next = SuperVersion {
            mem,
            imms,
            version: current.version.clone(),
            pending_compaction_bytes: current.pending_compaction_bytes,
        };
        *current = Arc::new(next);
    }
    drop(log);
    Ok(())
}

/// Switches a non-empty memtable and waits until nothing is left to flush.
pub(crate) fn flush(inner: &Arc<DbInner>) -> Result<()> {
    inner.check_open()?;
    {
        let mut state = inner.write.lock();
        // Take the leader's place so no group is mid-commit during the switch.
        let slot: Slot = Arc::new(parking_lot::Mutex::new(PendingWrite {
            batch: None,
            sync: false,
            result: None,
        }));
        let committed = join_queue(inner, &mut state, &slot);
        debug_assert!(committed.is_none(), "a flush slot is never grouped");
        let result = make_room(inner, &mut state, true);
        state.queue.pop_front();
        inner.write_cv.notify_all();
        result?;
    }
    let mut state = inner.write.lock();
    loop {
        inner.check_background_error()?;
        if inner
            .trees()
            .iter()
            .all(|t| t.super_version().imms.is_empty())
        {
            return Ok(());
        }
        wake_background(inner);
        inner
            .write_cv
            .wait_for(state.raw(), Duration::from_millis(100));
    }
}
