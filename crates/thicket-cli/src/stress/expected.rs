//! The expected-state shadow (after RocksDB's `ExpectedState`): per key the
//! value base of the last acknowledged write and, while a write is in flight,
//! the base it is writing and its batch. Each slot is written through to a
//! file with `pwrite` before and after the store's write, so after a SIGKILL
//! the file says, per key, which values the store may hold.
//!
//! File layout: `THKSTRS1`, key count (u32 LE), keyspace count (u32 LE; 0,
//! in files that predate keyspaces, means 1), then 16 bytes per key:
//! acknowledged base, in-flight base (`NONE` when idle), batch id (0 for
//! single-key writes), all little endian.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock};

use super::keys::ABSENT;

/// In-flight base meaning "no write in flight".
pub const NONE: u32 = u32::MAX;
const MAGIC: &[u8; 8] = b"THKSTRS1";
const HEADER_LEN: u64 = 16;
const SLOT_LEN: u64 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub acked: u32,
    pub pending: u32,
    pub batch: u64,
}

impl Slot {
    const EMPTY: Slot = Slot {
        acked: ABSENT,
        pending: NONE,
        batch: 0,
    };

    fn encode(&self) -> [u8; SLOT_LEN as usize] {
        let mut b = [0u8; SLOT_LEN as usize];
        b[..4].copy_from_slice(&self.acked.to_le_bytes());
        b[4..8].copy_from_slice(&self.pending.to_le_bytes());
        b[8..].copy_from_slice(&self.batch.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Slot {
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        Slot {
            acked: u32_at(0),
            pending: u32_at(4),
            batch: u64::from_le_bytes(b[8..16].try_into().expect("8 bytes")),
        }
    }

    /// Whether a store holding `base` for this key is consistent with it.
    pub fn allows(&self, base: u32) -> bool {
        base == self.acked || (self.pending != NONE && base == self.pending)
    }

    pub fn describe(&self) -> String {
        let acked = super::keys::describe_base(self.acked);
        if self.pending == NONE {
            acked
        } else {
            format!(
                "{acked} or (in flight) {}",
                super::keys::describe_base(self.pending)
            )
        }
    }
}

/// One write in the order the store applied it (power-loss mode only).
#[derive(Debug, Clone)]
pub struct HistoryEntry {
    pub ops: Vec<(u32, u32)>,
    pub sync: bool,
    pub acked: bool,
}

pub struct Expected {
    slots: Vec<Mutex<Slot>>,
    /// Keyspaces the keys are spread over (`spaces.rs`).
    keyspaces: u32,
    file: Option<File>,
    /// Writers hold it shared for a whole write; `capture` holds it
    /// exclusively, so a snapshot and a copy of the slots agree.
    gate: RwLock<()>,
    next_batch: AtomicU64,
    /// Some: record every write, serialized, in store order.
    history: Mutex<Option<Vec<HistoryEntry>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn bad_file(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("expected-state file {}: {why}", path.display()),
    )
}

impl Expected {
    fn from_slots(slots: Vec<Slot>, keyspaces: u32, file: Option<File>) -> Expected {
        Expected {
            slots: slots.into_iter().map(Mutex::new).collect(),
            keyspaces: keyspaces.max(1),
            file,
            gate: RwLock::new(()),
            next_batch: AtomicU64::new(1),
            history: Mutex::new(None),
        }
    }

    /// A shadow kept in memory only (power-loss mode, tests).
    pub fn in_memory(keys: u32, keyspaces: u32) -> Expected {
        Expected::from_slots(vec![Slot::EMPTY; keys as usize], keyspaces, None)
    }

    /// Creates the file for `keys` empty keys spread over `keyspaces` (via a
    /// temporary file and a rename, so a crash never leaves half a file).
    pub fn create(path: &Path, keys: u32, keyspaces: u32) -> io::Result<Expected> {
        let mut tmp_name = path.as_os_str().to_owned();
        tmp_name.push(".tmp");
        let tmp = Path::new(&tmp_name);
        let mut out = Vec::with_capacity((HEADER_LEN + SLOT_LEN * u64::from(keys)) as usize);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&keys.to_le_bytes());
        out.extend_from_slice(&keyspaces.to_le_bytes());
        for _ in 0..keys {
            out.extend_from_slice(&Slot::EMPTY.encode());
        }
        let mut f = File::create(tmp)?;
        f.write_all(&out)?;
        f.sync_all()?;
        std::fs::rename(tmp, path)?;
        Expected::open(path)
    }

    pub fn open(path: &Path) -> io::Result<Expected> {
        let data = std::fs::read(path)?;
        if data.len() < HEADER_LEN as usize || &data[..8] != MAGIC {
            return Err(bad_file(path, "bad header"));
        }
        let keys = u32::from_le_bytes(data[8..12].try_into().expect("4 bytes"));
        let keyspaces = u32::from_le_bytes(data[12..16].try_into().expect("4 bytes"));
        if data.len() as u64 != HEADER_LEN + SLOT_LEN * u64::from(keys) {
            return Err(bad_file(path, "wrong length for its key count"));
        }
        let slots = data[HEADER_LEN as usize..]
            .chunks_exact(SLOT_LEN as usize)
            .map(Slot::decode)
            .collect();
        let file = File::options().write(true).open(path)?;
        Ok(Expected::from_slots(slots, keyspaces, Some(file)))
    }

    pub fn keys(&self) -> u32 {
        self.slots.len() as u32
    }

    /// The number of keyspaces the keys are spread over.
    pub fn keyspaces(&self) -> u32 {
        self.keyspaces
    }

    pub fn slot(&self, i: u32) -> Slot {
        *lock(&self.slots[i as usize])
    }

    /// Locks key `i` (readers use it to read the store and the slot as one).
    pub fn lock_key(&self, i: u32) -> MutexGuard<'_, Slot> {
        lock(&self.slots[i as usize])
    }

    fn persist(&self, i: u32, slot: &Slot) -> io::Result<()> {
        match &self.file {
            Some(f) => f.write_all_at(&slot.encode(), HEADER_LEN + SLOT_LEN * u64::from(i)),
            None => Ok(()),
        }
    }

    /// Sets every key to `bases` with nothing in flight (after a recovery
    /// has been verified).
    pub fn reset(&self, bases: &[u32]) -> io::Result<()> {
        for (i, &acked) in bases.iter().enumerate() {
            let mut slot = lock(&self.slots[i]);
            *slot = Slot {
                acked,
                pending: NONE,
                batch: 0,
            };
            self.persist(i as u32, &slot)?;
        }
        match &self.file {
            Some(f) => f.sync_data(),
            None => Ok(()),
        }
    }

    /// Applies `ops` (distinct keys, `(key, base)`) to the store through
    /// `apply`, recording them as in flight first and as acknowledged when
    /// `apply` succeeds. A failed write stays in flight: the store may or
    /// may not hold it.
    pub fn write<E>(
        &self,
        ops: &[(u32, u32)],
        sync: bool,
        apply: impl FnOnce() -> Result<(), E>,
    ) -> io::Result<Result<(), E>> {
        let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        let mut order: Vec<usize> = (0..ops.len()).collect();
        order.sort_by_key(|&n| ops[n].0);
        let batch = if ops.len() > 1 {
            self.next_batch.fetch_add(1, Ordering::Relaxed)
        } else {
            0
        };
        let mut guards = Vec::with_capacity(ops.len());
        for n in order {
            let (i, base) = ops[n];
            let mut slot = lock(&self.slots[i as usize]);
            slot.pending = base;
            slot.batch = batch;
            self.persist(i, &slot)?;
            guards.push((i, slot));
        }
        let mut history = lock(&self.history);
        let entry = history.as_mut().map(|h| {
            h.push(HistoryEntry {
                ops: ops.to_vec(),
                sync,
                acked: false,
            });
            h.len() - 1
        });
        let result = apply();
        if result.is_ok() {
            if let (Some(h), Some(n)) = (history.as_mut(), entry) {
                h[n].acked = true;
            }
            drop(history);
            for (i, slot) in &mut guards {
                slot.acked = slot.pending;
                slot.pending = NONE;
                slot.batch = 0;
                self.persist(*i, slot)?;
            }
        }
        Ok(result)
    }

    /// Runs `f` (which takes a snapshot) while no write is in flight, and
    /// returns its result with a copy of every slot.
    pub fn capture<T>(&self, f: impl FnOnce() -> T) -> (T, Vec<Slot>) {
        let _gate = self.gate.write().unwrap_or_else(|e| e.into_inner());
        let t = f();
        (t, self.slots.iter().map(|s| *lock(s)).collect())
    }

    /// Starts recording the write history (and serializing writes).
    pub fn start_history(&self) {
        *lock(&self.history) = Some(Vec::new());
    }

    pub fn take_history(&self) -> Vec<HistoryEntry> {
        lock(&self.history).take().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_survive_reopen_with_in_flight_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.expected");
        let e = Expected::create(&path, 10, 3).unwrap();
        e.write(&[(3, 7)], false, || Ok::<(), ()>(()))
            .unwrap()
            .unwrap();
        e.write(&[(4, 8), (2, 9)], true, || Err(()))
            .unwrap()
            .unwrap_err();
        drop(e);
        let e = Expected::open(&path).unwrap();
        assert_eq!((e.keys(), e.keyspaces()), (10, 3));
        assert_eq!(
            e.slot(3),
            Slot {
                acked: 7,
                pending: NONE,
                batch: 0
            }
        );
        let (a, b) = (e.slot(4), e.slot(2));
        assert_eq!((a.acked, a.pending, b.pending), (ABSENT, 8, 9));
        assert!(a.batch != 0 && a.batch == b.batch);
        assert!(a.allows(ABSENT) && a.allows(8) && !a.allows(9));
        e.reset(&[1; 10]).unwrap();
        drop(e);
        let e = Expected::open(&path).unwrap();
        assert_eq!(
            e.slot(4),
            Slot {
                acked: 1,
                pending: NONE,
                batch: 0
            }
        );
    }

    #[test]
    fn damaged_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.expected");
        Expected::create(&path, 3, 1).unwrap();
        let mut data = std::fs::read(&path).unwrap();
        data.pop();
        std::fs::write(&path, &data).unwrap();
        assert!(Expected::open(&path).is_err());
    }

    #[test]
    fn history_records_writes_in_order() {
        let e = Expected::in_memory(4, 1);
        e.start_history();
        e.write(&[(1, 5)], true, || Ok::<(), ()>(()))
            .unwrap()
            .unwrap();
        let _ = e.write(&[(2, 6), (3, 7)], false, || Err(())).unwrap();
        let h = e.take_history();
        assert_eq!(h.len(), 2);
        assert!(h[0].acked && h[0].sync);
        assert!(!h[1].acked && h[1].ops == [(2, 6), (3, 7)]);
        assert!(e.take_history().is_empty());
    }
}
