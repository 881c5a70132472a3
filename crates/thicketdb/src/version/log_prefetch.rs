//! TRIAD-LOG compactions read each input log once. A log table's values lie
//! scattered over its log in key order, and a merge walks its L0 log
//! tables side by side in key order; reading them in batches of the
//! merge's order (`TableIterator`'s `LogBatch`) read every block of each
//! log once per batch, so a compaction of N log tables under a fixed
//! budget read each log (live bytes / (budget / N)) times: quadratic in N
//! (docs/reproduction.md, "TRIAD, session 17 rounds", round 7).
//!
//! Here, before the merge, each log the group's log tables address is read
//! once, in offset order, through spans of consecutive blocks
//! (`log_spans.rs`), for the values of every log table of the group that
//! addresses it. The values are an external sort by (table, entry): they
//! gather in a chunk of at most `triad_log_compaction_batch` bytes; a full
//! chunk is sorted and appended to a scratch file (`NNNNNN.tmp`, deleted
//! when the merge is done, swept at open after a crash) as one sorted
//! run, and the last chunk stays in memory. A table's cursor then takes
//! each value from the run that holds it: from memory, or through a small
//! sequential buffer into its part of a spilled run. Memory is the chunk
//! plus a few bytes per entry (the entry's stored address and its run);
//! each log is read once and each spilled value written and read once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::cmp::Ordering as CmpOrdering;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::format::internal_key::{ParsedKey, ValueKind};
use crate::format::KeyOrder;
use crate::io::{FileSystem, RandomAccessFile, WritableFile};
use crate::iterator::InternalIterator;
use crate::log::ValueAddress;
use crate::table::PreparedValues;
use crate::version::files::temp_path;
use crate::version::log_spans::SpanReader;
use crate::version::log_values::StoreLogs;
use crate::version::table_cache::TableCache;
use crate::version::TableMeta;

/// Bytes a cursor into a spilled run reads at once.
const RUN_READ: u64 = 32 << 10;

/// The smallest chunk: below it the runs' cursors cost more than they
/// save.
const MIN_CHUNK: u64 = 64 << 10;

/// `run_of` for a value held in the memory run.
const IN_MEMORY: u16 = u16::MAX;

/// `run_of` for a value the pass did not read (never so once `prepare`
/// returns; then the cursor would read it from the log).
const UNREAD: u16 = u16::MAX - 1;

/// `run_of` for a put the merge drops (a newer version of its key is
/// visible to every snapshot): never read; the merge gets an empty value.
const SHADOWED: u16 = u16::MAX - 2;

/// The largest chunk (memory offsets are 32-bit).
const MAX_CHUNK: u64 = 1 << 30;

/// Log tables' values read before a merge, by table id.
pub struct PreparedTables {
    tables: Mutex<HashMap<u64, Box<dyn PreparedValues>>>,
}

impl PreparedTables {
    /// The values of table `id`, once (a second open reads from the log).
    pub fn take(&self, id: u64) -> Option<Box<dyn PreparedValues>> {
        self.tables.lock().remove(&id)
    }
}

/// The scratch file of spilled runs; removed when the last table reading
/// it is done.
struct Spill {
    fs: Arc<dyn FileSystem>,
    path: PathBuf,
}

impl Drop for Spill {
    fn drop(&mut self) {
        // A failed removal leaves a `.tmp` file that the next open sweeps.
        let _ = self.fs.remove(&self.path);
    }
}

/// A cursor into one table's part of one spilled run.
#[derive(Default)]
struct RunCursor {
    /// File offset of the next value.
    pos: u64,
    /// The buffer and the file offset of its first byte.
    buf: Vec<u8>,
    buf_at: u64,
}

/// One log table's values, in its order of puts.
#[derive(Default)]
struct TableValues {
    /// Each put's stored address, in table order: `addresses[ends[i-1]..ends[i]]`.
    addresses: Vec<u8>,
    ends: Vec<u32>,
    /// Each put's value length (from its address).
    lens: Vec<u32>,
    /// The logs its puts' values lie in.
    logs: Vec<u64>,
    /// The spilled run holding each value, or `IN_MEMORY`.
    run_of: Vec<u16>,
    /// Where each value held in memory starts in `memory`.
    mem_start: Vec<u32>,
    /// Where this table's part of each spilled run starts in the file
    /// (`u64::MAX`: none of its values in that run).
    run_starts: Vec<u64>,
    /// Puts served or skipped so far.
    next: usize,
    cursors: Vec<Option<RunCursor>>,
    memory: Arc<Vec<u8>>,
    /// Declared before `spill`: the descriptor closes before the file goes.
    file: Option<Arc<dyn RandomAccessFile>>,
    file_len: u64,
    spill: Option<Arc<Spill>>,
}

impl TableValues {
    fn address(&self, i: usize) -> &[u8] {
        let start = match i {
            0 => 0,
            _ => self.ends[i - 1] as usize,
        };
        &self.addresses[start..self.ends[i] as usize]
    }

    fn cursor(&mut self, run: u16) -> &mut RunCursor {
        let r = run as usize;
        if self.cursors.len() <= r {
            self.cursors.resize_with(r + 1, || None);
        }
        let start = self.run_starts[r];
        self.cursors[r].get_or_insert_with(|| RunCursor {
            pos: start,
            ..RunCursor::default()
        })
    }

    /// Passes put `i` without reading its value.
    fn skip(&mut self, i: usize) {
        let run = self.run_of[i];
        if run != IN_MEMORY && run != SHADOWED {
            let len = self.lens[i] as u64;
            self.cursor(run).pos += len;
        }
    }

    /// Reads put `i`'s value into `out`.
    fn read(&mut self, i: usize, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let len = self.lens[i] as usize;
        let run = self.run_of[i];
        if run == SHADOWED {
            return Ok(()); // the merge drops it (see `prepare`)
        }
        if run == IN_MEMORY {
            let start = self.mem_start[i] as usize;
            out.extend_from_slice(&self.memory[start..start + len]);
            return Ok(());
        }
        let file = self
            .file
            .clone()
            .ok_or_else(|| Error::invariant("a spilled log value without its file"))?;
        let file_len = self.file_len;
        let c = self.cursor(run);
        let end = c.pos + len as u64;
        let buffered = c.buf_at + c.buf.len() as u64;
        if c.pos < c.buf_at || end > buffered {
            let want = (len as u64).max(RUN_READ).min(file_len.saturating_sub(c.pos));
            c.buf.resize(want as usize, 0);
            file.read_exact_at(c.pos, &mut c.buf)?;
            c.buf_at = c.pos;
        }
        let at = (c.pos - c.buf_at) as usize;
        out.extend_from_slice(&c.buf[at..at + len]);
        c.pos = end;
        Ok(())
    }
}

impl PreparedValues for TableValues {
    fn value_of(&mut self, address: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let Some(found) = (self.next..self.ends.len()).find(|&i| self.address(i) == address) else {
            return Ok(false);
        };
        if self.run_of[found] == UNREAD {
            return Ok(false);
        }
        for i in self.next..found {
            self.skip(i);
        }
        self.read(found, out)?;
        self.next = found + 1;
        Ok(true)
    }
}

/// Where the read values gather before they are sorted.
struct Chunk {
    bytes: Vec<u8>,
    /// (table, entry, start in `bytes`) per value.
    entries: Vec<(u32, u32, usize)>,
}

/// The values of `tables`' log tables, each log they address read once
/// (see the module's comment). `budget`: the bytes of values held in
/// memory at once (`triad_log_compaction_batch`); spilled runs go to a
/// scratch file numbered by `new_file_number`. A put the merge will drop
/// (a newer version of its key in the group's log tables is visible to
/// every snapshot: `smallest_snapshot`, the merge's `DropRule`) is not
/// read at all.
pub fn prepare(
    logs: &StoreLogs,
    cache: &TableCache,
    tables: &[&Arc<TableMeta>],
    order: &KeyOrder,
    smallest_snapshot: u64,
    budget: u64,
    new_file_number: &dyn Fn() -> u64,
) -> Result<Arc<PreparedTables>> {
    let budget = budget.clamp(MIN_CHUNK, MAX_CHUNK) as usize;
    let mut values: Vec<TableValues> = tables.iter().map(|_| TableValues::default()).collect();
    let mut cursors = Vec::with_capacity(tables.len());
    for meta in tables {
        let table = cache.table(meta)?;
        let mut it = table.iter_with(false).with_stored_values();
        it.seek_to_first();
        cursors.push((it, table.path().to_path_buf()));
    }
    // The tables' entries merged in the merge's order (user key, then
    // newest first): an entry is shadowed for every snapshot when the
    // entry before it of the same user key is at or below
    // `smallest_snapshot`, exactly the `DropRule`'s test (entries of the
    // group's other tables can only make the merge drop more). On ws2 a
    // compaction's log tables repeat a quarter of their hot keys; on ws1
    // most of them.
    let mut last_key: Vec<u8> = Vec::new();
    let mut last_seq = u64::MAX;
    loop {
        let mut next: Option<usize> = None;
        for (ci, (it, _)) in cursors.iter().enumerate() {
            if !it.valid() {
                continue;
            }
            let smaller = match next {
                None => true,
                Some(n) => order.internal(it.key(), cursors[n].0.key()) == CmpOrdering::Less,
            };
            if smaller {
                next = Some(ci);
            }
        }
        let Some(ci) = next else { break };
        let (it, path) = &mut cursors[ci];
        let path: &std::path::Path = path;
        let corrupt = |why: &str| Error::corruption(path, 0, format!("log table entry: {why}"));
        let key = ParsedKey::parse(it.key()).ok_or_else(|| corrupt("short key"))?;
        let same_key = order.user(key.user_key, &last_key) == CmpOrdering::Equal && last_seq != u64::MAX;
        // Two copies of one entry (none are written) would be both read:
        // which one the merge keeps is its own choice.
        let shadowed = same_key && last_seq <= smallest_snapshot && last_seq != key.sequence;
        if !same_key {
            last_key.clear();
            last_key.extend_from_slice(key.user_key);
        }
        last_seq = key.sequence;
        if key.kind == ValueKind::Value {
            let t = &mut values[ci];
            let stored = it.value();
            let address = ValueAddress::decode(stored).map_err(corrupt)?;
            let len = u32::try_from(address.len).map_err(|_| corrupt("value too long"))?;
            if shadowed {
                t.run_of.push(SHADOWED);
                t.lens.push(0);
            } else {
                if !t.logs.contains(&address.record.log_number) {
                    t.logs.push(address.record.log_number);
                }
                t.run_of.push(UNREAD);
                t.lens.push(len);
            }
            t.addresses.extend_from_slice(stored);
            t.ends.push(t.addresses.len() as u32);
        }
        it.next();
    }
    for (it, _) in &cursors {
        it.status()?;
    }
    drop(cursors);
    let mut shadowed = 0;
    for t in &mut values {
        t.mem_start = vec![0; t.ends.len()];
        shadowed += t.run_of.iter().filter(|&&r| r == SHADOWED).count() as u64;
    }
    logs.note_shadowed(shadowed);

    let mut log_numbers: Vec<u64> = values.iter().flat_map(|t| t.logs.iter().copied()).collect();
    log_numbers.sort_unstable();
    log_numbers.dedup();
    let mut chunk = Chunk {
        bytes: Vec::new(),
        entries: Vec::new(),
    };
    let mut spill: Option<(Arc<Spill>, Box<dyn WritableFile>)> = None;
    let mut runs: u16 = 0;
    let mut written: u64 = 0;
    let mut value = Vec::new();
    for log in log_numbers {
        // The group's values in this log, in log order.
        let mut here: Vec<(ValueAddress, u32, u32)> = Vec::new();
        for (ti, t) in values.iter().enumerate() {
            if !t.logs.contains(&log) {
                continue;
            }
            for i in 0..t.ends.len() {
                if t.run_of[i] == SHADOWED {
                    continue;
                }
                // Decoded once already.
                let a = ValueAddress::decode(t.address(i)).map_err(Error::invariant)?;
                if a.record.log_number == log {
                    here.push((a, ti as u32, i as u32));
                }
            }
        }
        here.sort_unstable_by_key(|(a, _, _)| (a.record.offset, a.offset));
        let in_order: Vec<ValueAddress> = here.iter().map(|(a, _, _)| *a).collect();
        let reader = logs.log_reader(log)?;
        let mut spans = SpanReader::new(&reader);
        for (k, (_, ti, i)) in here.iter().enumerate() {
            spans.read_value(&in_order[k..], &mut value)?;
            chunk.entries.push((*ti, *i, chunk.bytes.len()));
            chunk.bytes.extend_from_slice(&value);
            if chunk.bytes.len() >= budget {
                if spill.is_none() {
                    let path = temp_path(logs.dir(), new_file_number());
                    let file = logs.fs().create(&path)?;
                    let guard = Arc::new(Spill {
                        fs: Arc::clone(logs.fs()),
                        path,
                    });
                    spill = Some((guard, file));
                }
                let (_, file) = spill.as_mut().expect("made above");
                if runs >= SHADOWED {
                    return Err(Error::invariant("too many spilled runs of log values"));
                }
                written += spill_run(&mut chunk, &mut values, runs, written, file.as_mut())?;
                runs += 1;
            }
        }
        logs.note_batch(here.len() as u64, spans.reads(), spans.bytes_read());
    }
    // The last chunk stays in memory.
    for &(ti, i, start) in &chunk.entries {
        let t = &mut values[ti as usize];
        t.run_of[i as usize] = IN_MEMORY;
        t.mem_start[i as usize] = start as u32;
    }
    let memory = Arc::new(std::mem::take(&mut chunk.bytes));
    drop(chunk);
    let file = match spill {
        Some((guard, mut writer)) => {
            writer.flush()?;
            drop(writer);
            let file = logs.fs().open_random(&guard.path)?;
            logs.note_spill(written);
            Some((guard, file))
        }
        None => None,
    };
    let mut map: HashMap<u64, Box<dyn PreparedValues>> = HashMap::with_capacity(values.len());
    for (mut t, meta) in values.into_iter().zip(tables) {
        t.memory = Arc::clone(&memory);
        if let Some((guard, file)) = &file {
            t.file = Some(Arc::clone(file));
            t.file_len = written;
            t.spill = Some(Arc::clone(guard));
        }
        map.insert(meta.id, Box::new(t));
    }
    Ok(Arc::new(PreparedTables {
        tables: Mutex::new(map),
    }))
}

/// Sorts `chunk` by (table, entry), appends it to `file` as spilled run
/// `run` starting at file offset `at`, and empties it; returns the bytes
/// written.
fn spill_run(
    chunk: &mut Chunk,
    values: &mut [TableValues],
    run: u16,
    at: u64,
    file: &mut dyn WritableFile,
) -> Result<u64> {
    chunk.entries.sort_unstable_by_key(|&(t, i, _)| (t, i));
    let mut pos = at;
    for &(ti, i, start) in &chunk.entries {
        let t = &mut values[ti as usize];
        let len = t.lens[i as usize] as usize;
        let r = run as usize;
        if t.run_starts.len() <= r {
            t.run_starts.resize(r + 1, u64::MAX);
        }
        if t.run_starts[r] == u64::MAX {
            t.run_starts[r] = pos;
        }
        t.run_of[i as usize] = run;
        file.append(&chunk.bytes[start..start + len])?;
        pos += len as u64;
    }
    chunk.entries.clear();
    chunk.bytes.clear();
    Ok(pos - at)
}
