//! An in-memory file system for crash and error tests (after LevelDB's
//! fault_injection_test and RocksDB's FaultInjectionTestFS).
//!
//! It models the three places data can be: a writable file's user-space
//! buffer (lost in a process crash), the "OS" (visible to readers, lost in a
//! power loss unless synced), and durable storage. Directory entries are
//! modelled the same way: a create, rename or remove is durable only after
//! `sync_dir` of its directory. Directories themselves are durable at once.
//!
//! It lives in the library rather than under `#[cfg(test)]` so that the
//! engine's integration tests can use it.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::fs::{
    FileLock, FileSyncer, FileSystem, RandomAccessFile, SequentialFile, WritableFile,
};
use crate::error::{Error, Result};

/// The error an injected fault produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// `Error::NoSpace`, as for ENOSPC.
    NoSpace,
    /// `Error::Io`, as for EIO.
    Io,
}

impl FaultKind {
    fn error(self, path: &Path) -> Error {
        let err = match self {
            FaultKind::NoSpace => io::Error::new(
                io::ErrorKind::StorageFull,
                "no space left on device (injected)",
            ),
            FaultKind::Io => io::Error::other("input/output error (injected)"),
        };
        Error::io(err, path.display().to_string())
    }
}

/// Operation counts since the file system was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultStats {
    pub creates: u64,
    pub appends: u64,
    pub bytes_appended: u64,
    /// Bytes that reached the "OS" (by `flush` or `sync`).
    pub bytes_written: u64,
    pub flushes: u64,
    pub syncs: u64,
    pub dir_syncs: u64,
    pub renames: u64,
    pub removes: u64,
    /// Operations failed on purpose.
    pub injected_failures: u64,
}

/// SplitMix64: enough randomness to pick failures reproducibly from a seed
/// (`rand` is only a dev-dependency, and this file is part of the library).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64) / ((1u64 << 53) as f64) < p
    }
}

struct RandomFaults {
    rng: SplitMix64,
    probability: f64,
    kind: FaultKind,
}

/// Which operations fail. Budgets that run out leave the device failing
/// (`always`) until `clear_faults`, as a full disk stays full.
#[derive(Default)]
struct Faults {
    always: Option<FaultKind>,
    ops_left: Option<(u64, FaultKind)>,
    bytes_left: Option<(u64, FaultKind)>,
    random: Option<RandomFaults>,
}

impl Faults {
    /// Whether the next fallible operation fails, and how.
    fn next_op(&mut self) -> Option<FaultKind> {
        if let Some(kind) = self.always {
            return Some(kind);
        }
        if let Some((left, kind)) = &mut self.ops_left {
            if *left == 0 {
                self.always = Some(*kind);
                return self.always;
            }
            *left -= 1;
        }
        let random = self.random.as_mut()?;
        random.rng.chance(random.probability).then_some(random.kind)
    }

    /// How many of `n` bytes can still be written, and the fault hit when
    /// not all of them can.
    fn admit_bytes(&mut self, n: usize) -> (usize, Option<FaultKind>) {
        let Some((left, kind)) = &mut self.bytes_left else {
            return (n, None);
        };
        let admitted = n.min(usize::try_from(*left).unwrap_or(usize::MAX));
        *left -= admitted as u64;
        if admitted < n {
            self.always = Some(*kind);
            return (admitted, Some(*kind));
        }
        (admitted, None)
    }
}

#[derive(Default)]
struct FileData {
    /// Everything handed to the "OS".
    data: Vec<u8>,
    /// The prefix of `data` that survives a power loss. Files only grow by
    /// appends, so durable content is always a prefix.
    synced_len: usize,
}

/// A file's content, shared by every name and handle that refers to it, as
/// an inode is.
type Inode = Arc<Mutex<FileData>>;

#[derive(Default)]
struct Disk {
    dirs: HashSet<PathBuf>,
    /// The directory entries as the running process sees them.
    files: HashMap<PathBuf, Inode>,
    /// The directory entries as of each directory's last `sync_dir`.
    durable_files: HashMap<PathBuf, Inode>,
    locks: HashMap<PathBuf, u64>,
    next_lock_id: u64,
    /// Bumped by each simulated crash: handles from an earlier epoch belong
    /// to the dead process and refuse to write.
    epoch: u64,
    faults: Faults,
    stats: FaultStats,
    /// Directories renamed (`from`, `to`) whose parent was not synced
    /// since: a power loss undoes them.
    unsynced_dir_renames: Vec<(PathBuf, PathBuf)>,
}

/// `path` with its prefix `from` replaced by `to`, if it is under `from`.
fn moved(path: &Path, from: &Path, to: &Path) -> Option<PathBuf> {
    let rest = path.strip_prefix(from).ok()?;
    Some(if rest.as_os_str().is_empty() {
        to.to_path_buf()
    } else {
        to.join(rest)
    })
}

/// Renames every key under `from` (and `from` itself) to be under `to`.
fn move_keys<V>(map: &mut HashMap<PathBuf, V>, from: &Path, to: &Path) {
    let keys: Vec<PathBuf> = map
        .keys()
        .filter(|p| p.starts_with(from))
        .cloned()
        .collect();
    for key in keys {
        if let (Some(value), Some(new)) = (map.remove(&key), moved(&key, from, to)) {
            map.insert(new, value);
        }
    }
}

fn move_dirs(dirs: &mut HashSet<PathBuf>, from: &Path, to: &Path) {
    let under: Vec<PathBuf> = dirs.iter().filter(|p| p.starts_with(from)).cloned().collect();
    for dir in under {
        dirs.remove(&dir);
        if let Some(new) = moved(&dir, from, to) {
            dirs.insert(new);
        }
    }
}

impl Disk {
    /// Applies the injected faults to one fallible operation on `path`.
    fn check_fault(&mut self, path: &Path) -> Result<()> {
        match self.faults.next_op() {
            Some(kind) => Err(self.injected(kind, path)),
            None => Ok(()),
        }
    }

    fn injected(&mut self, kind: FaultKind, path: &Path) -> Error {
        self.stats.injected_failures += 1;
        kind.error(path)
    }

    fn dir_exists(&self, dir: &Path) -> bool {
        dir.as_os_str().is_empty() || dir.parent().is_none() || self.dirs.contains(dir)
    }

    fn check_parent(&self, path: &Path) -> Result<()> {
        match path.parent() {
            Some(dir) if !self.dir_exists(dir) => Err(not_found(dir)),
            _ => Ok(()),
        }
    }

    fn inode(&self, path: &Path) -> Result<Inode> {
        self.files.get(path).cloned().ok_or_else(|| not_found(path))
    }

    /// The crashed process's open files and locks die with it.
    fn end_process(&mut self) {
        self.epoch += 1;
        self.locks.clear();
    }
}

fn crashed(path: &Path) -> Error {
    Error::io(
        io::Error::other("file system of a process that crashed (simulated)"),
        path.display().to_string(),
    )
}

/// Renames the directory `from`, with everything in it, to `to` (which
/// must not exist); durable once their parent is synced (both in one
/// directory, as the engine's checkpoints rename).
fn rename_dir(disk: &mut Disk, from: &Path, to: &Path) -> Result<()> {
    if disk.files.contains_key(to) || disk.dirs.contains(to) {
        return Err(Error::io(
            io::Error::new(io::ErrorKind::AlreadyExists, "the target exists"),
            to.display().to_string(),
        ));
    }
    disk.check_parent(to)?;
    disk.check_fault(from)?;
    disk.stats.renames += 1;
    move_keys(&mut disk.files, from, to);
    move_dirs(&mut disk.dirs, from, to);
    disk.unsynced_dir_renames
        .push((from.to_path_buf(), to.to_path_buf()));
    Ok(())
}

fn not_found(path: &Path) -> Error {
    Error::io(
        io::Error::new(io::ErrorKind::NotFound, "no such file or directory"),
        path.display().to_string(),
    )
}

/// The in-memory, fault-injecting file system. Clones share the same files.
///
/// Fallible operations (`create`, `append`, `flush`, `sync`, `rename`,
/// `sync_dir`) are subject to injected faults; reads, `remove` (it frees
/// space) and `lock` are not.
///
/// A clone is the file system as one process sees it: it belongs to the
/// process running when it was made, and after a simulated crash or power
/// loss it refuses every change (create, rename, remove, sync, lock, hole
/// punch), as a dead process makes none. Without this a store still
/// running in the test after `drop_unsynced` (its background work, its
/// `Drop`) could remove or rewrite files of the state that survived. The
/// value `new` returns belongs to no process: the test drives it.
#[derive(Default)]
pub struct FaultFs {
    disk: Arc<Mutex<Disk>>,
    /// The epoch of the process this view belongs to; `None` for the test's.
    process: Option<u64>,
}

impl Clone for FaultFs {
    fn clone(&self) -> FaultFs {
        let epoch = self.disk.lock().epoch;
        FaultFs {
            disk: Arc::clone(&self.disk),
            process: Some(epoch),
        }
    }
}

impl FaultFs {
    pub fn new() -> FaultFs {
        FaultFs::default()
    }

    /// Refuses a change from a view whose process has crashed.
    fn check_alive(&self, disk: &Disk, path: &Path) -> Result<()> {
        match self.process {
            Some(epoch) if epoch != disk.epoch => Err(crashed(path)),
            _ => Ok(()),
        }
    }

    /// Simulates a power loss: every file reverts to its synced content and
    /// every directory to its last synced entries. Handles opened before
    /// belong to the dead process: their writes fail, their locks are gone.
    pub fn drop_unsynced(&self) {
        let mut disk = self.disk.lock();
        disk.end_process();
        disk.files = disk.durable_files.clone();
        for (from, to) in std::mem::take(&mut disk.unsynced_dir_renames).into_iter().rev() {
            move_dirs(&mut disk.dirs, &to, &from);
        }
        for inode in disk.files.values() {
            let mut file = inode.lock();
            let synced = file.synced_len;
            file.data.truncate(synced);
        }
    }

    /// Simulates a process crash: what reached the OS survives, bytes still
    /// in writable files' buffers are lost. Handles opened before belong to
    /// the dead process: their writes fail, their locks are gone.
    pub fn crash_process(&self) {
        self.disk.lock().end_process();
    }

    /// `Some(kind)`: every fallible operation fails from now on; `None`:
    /// stop doing that.
    pub fn set_write_error(&self, kind: Option<FaultKind>) {
        self.disk.lock().faults.always = kind;
    }

    /// The next `ops` fallible operations succeed, every later one fails.
    pub fn fail_after_ops(&self, ops: u64, kind: FaultKind) {
        self.disk.lock().faults.ops_left = Some((ops, kind));
    }

    /// `bytes` more bytes can reach files; the write that crosses the
    /// budget stores what fits (a torn write) and fails, as do all fallible
    /// operations after it.
    pub fn fail_after_bytes(&self, bytes: u64, kind: FaultKind) {
        self.disk.lock().faults.bytes_left = Some((bytes, kind));
    }

    /// Each fallible operation fails with `probability`, reproducibly for a
    /// given `seed`.
    pub fn set_random_failures(&self, seed: u64, probability: f64, kind: FaultKind) {
        self.disk.lock().faults.random = Some(RandomFaults {
            rng: SplitMix64(seed),
            probability,
            kind,
        });
    }

    /// Removes every injected fault.
    pub fn clear_faults(&self) {
        self.disk.lock().faults = Faults::default();
    }

    pub fn stats(&self) -> FaultStats {
        self.disk.lock().stats
    }

    /// Flips every bit of the byte at `offset`, as disk damage would (the
    /// byte stays "synced" if it was).
    pub fn corrupt_byte(&self, path: &Path, offset: u64) -> Result<()> {
        let inode = self.disk.lock().inode(path)?;
        let mut file = inode.lock();
        let byte = usize::try_from(offset)
            .ok()
            .and_then(|at| file.data.get_mut(at))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "offset {offset} is past the end of {}",
                    path.display()
                ))
            })?;
        *byte ^= 0xff;
        Ok(())
    }

    /// Cuts a file to `len` bytes (no-op when it is shorter), durably.
    pub fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let inode = self.disk.lock().inode(path)?;
        let mut file = inode.lock();
        let len = usize::try_from(len)
            .unwrap_or(usize::MAX)
            .min(file.data.len());
        file.data.truncate(len);
        file.synced_len = file.synced_len.min(len);
        Ok(())
    }

    /// Paths of all files, sorted.
    pub fn file_names(&self) -> Vec<PathBuf> {
        let mut names: Vec<PathBuf> = self.disk.lock().files.keys().cloned().collect();
        names.sort();
        names
    }
}

struct FaultWritable {
    disk: Arc<Mutex<Disk>>,
    inode: Inode,
    path: PathBuf,
    epoch: u64,
    /// Appended bytes not yet handed to the "OS".
    buf: Vec<u8>,
    len: u64,
}

impl FaultWritable {
    /// A writer appending to `inode` (of `len` bytes) at `path`, in the
    /// process epoch of `disk`.
    fn new(
        disk: &Arc<Mutex<Disk>>,
        epoch: u64,
        inode: Inode,
        path: &Path,
        len: u64,
    ) -> FaultWritable {
        FaultWritable {
            disk: Arc::clone(disk),
            inode,
            path: path.to_path_buf(),
            epoch,
            buf: Vec::new(),
            len,
        }
    }

    /// Refuses writes from a crashed process, then applies injected faults.
    fn begin(&self, disk: &mut Disk) -> Result<()> {
        if disk.epoch != self.epoch {
            return Err(crashed(&self.path));
        }
        disk.check_fault(&self.path)
    }

    /// Moves the buffer into the file, as far as the byte budget allows.
    fn write_out(&mut self, disk: &mut Disk) -> Result<()> {
        let (admitted, fault) = disk.faults.admit_bytes(self.buf.len());
        self.inode
            .lock()
            .data
            .extend_from_slice(&self.buf[..admitted]);
        self.buf.drain(..admitted);
        disk.stats.bytes_written += admitted as u64;
        match fault {
            Some(kind) => Err(disk.injected(kind, &self.path)),
            None => Ok(()),
        }
    }
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let disk = Arc::clone(&self.disk);
        let mut disk = disk.lock();
        self.begin(&mut disk)?;
        disk.stats.appends += 1;
        disk.stats.bytes_appended += data.len() as u64;
        self.buf.extend_from_slice(data);
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let disk = Arc::clone(&self.disk);
        let mut disk = disk.lock();
        self.begin(&mut disk)?;
        disk.stats.flushes += 1;
        self.write_out(&mut disk)
    }

    fn sync(&mut self) -> Result<()> {
        let disk = Arc::clone(&self.disk);
        let mut disk = disk.lock();
        self.begin(&mut disk)?;
        disk.stats.syncs += 1;
        self.write_out(&mut disk)?;
        let mut file = self.inode.lock();
        file.synced_len = file.data.len();
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn buffer_bytes(&self) -> usize {
        self.buf.capacity()
    }

    fn release_buffer(&mut self) {
        if self.buf.is_empty() {
            self.buf = Vec::new();
        }
    }

    fn syncer(&self) -> Option<Arc<dyn FileSyncer>> {
        Some(Arc::new(FaultSyncer {
            disk: Arc::clone(&self.disk),
            inode: Arc::clone(&self.inode),
            path: self.path.clone(),
            epoch: self.epoch,
        }))
    }
}

/// A [`FaultWritable`]'s sync from another thread: makes durable what was
/// flushed when it runs (not the owner's buffer), with the same faults.
struct FaultSyncer {
    disk: Arc<Mutex<Disk>>,
    inode: Inode,
    path: PathBuf,
    epoch: u64,
}

impl FileSyncer for FaultSyncer {
    fn sync_data(&self) -> Result<()> {
        let mut disk = self.disk.lock();
        if disk.epoch != self.epoch {
            return Err(crashed(&self.path));
        }
        disk.check_fault(&self.path)?;
        disk.stats.syncs += 1;
        let mut file = self.inode.lock();
        file.synced_len = file.data.len();
        Ok(())
    }
}

struct FaultRandom {
    inode: Inode,
    path: PathBuf,
    /// Whose reader this is: punching a hole is a change.
    fs: FaultFs,
}

impl RandomAccessFile for FaultRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let file = self.inode.lock();
        let range = usize::try_from(offset)
            .ok()
            .and_then(|start| Some(start..start.checked_add(buf.len())?))
            .filter(|range| range.end <= file.data.len());
        match range {
            Some(range) => {
                buf.copy_from_slice(&file.data[range]);
                Ok(())
            }
            // Same as PosixFs: a short file is damage, never padded.
            None => Err(Error::corruption(
                &self.path,
                offset,
                format!("file too short to read {} bytes", buf.len()),
            )),
        }
    }

    fn len(&self) -> Result<u64> {
        Ok(self.inode.lock().data.len() as u64)
    }

    fn punch_hole(&self, offset: u64, len: u64) -> Result<bool> {
        // The disk stays locked so a crash falls wholly before or after.
        let disk = self.fs.disk.lock();
        self.fs.check_alive(&disk, &self.path)?;
        let mut file = self.inode.lock();
        let size = file.data.len();
        let clamp = |n: u64| usize::try_from(n).unwrap_or(usize::MAX).min(size);
        let start = clamp(offset);
        let end = clamp(offset.saturating_add(len));
        file.data[start..end].fill(0);
        Ok(true)
    }
}

struct FaultSequential {
    inode: Inode,
    pos: usize,
}

impl SequentialFile for FaultSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let file = self.inode.lock();
        let rest = file.data.get(self.pos..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.pos += n;
        Ok(n)
    }
}

struct FaultLock {
    disk: Arc<Mutex<Disk>>,
    path: PathBuf,
    id: u64,
}

impl FileLock for FaultLock {}

impl Drop for FaultLock {
    fn drop(&mut self) {
        let mut disk = self.disk.lock();
        // After a simulated crash the lock may belong to a new holder.
        if disk.locks.get(&self.path) == Some(&self.id) {
            disk.locks.remove(&self.path);
        }
    }
}

impl FileSystem for FaultFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let mut disk = self.disk.lock();
        self.check_alive(&disk, path)?;
        disk.check_parent(path)?;
        disk.check_fault(path)?;
        disk.stats.creates += 1;
        // A fresh inode: a replaced file's old content comes back if the
        // directory is not synced before a power loss.
        let inode = Inode::default();
        disk.files.insert(path.to_path_buf(), Arc::clone(&inode));
        Ok(Box::new(FaultWritable::new(
            &self.disk, disk.epoch, inode, path, 0,
        )))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let mut disk = self.disk.lock();
        self.check_alive(&disk, path)?;
        disk.check_fault(path)?;
        let inode = disk.inode(path)?;
        let len = inode.lock().data.len() as u64;
        Ok(Box::new(FaultWritable::new(
            &self.disk, disk.epoch, inode, path, len,
        )))
    }

    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let inode = self.disk.lock().inode(path)?;
        Ok(Arc::new(FaultRandom {
            inode,
            path: path.to_path_buf(),
            fs: FaultFs {
                disk: Arc::clone(&self.disk),
                process: self.process,
            },
        }))
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let inode = self.disk.lock().inode(path)?;
        Ok(Box::new(FaultSequential { inode, pos: 0 }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut disk = self.disk.lock();
        self.check_alive(&disk, from)?;
        if !disk.files.contains_key(from) && disk.dirs.contains(from) {
            return rename_dir(&mut disk, from, to);
        }
        let inode = disk.inode(from)?;
        disk.check_parent(to)?;
        disk.check_fault(from)?;
        disk.stats.renames += 1;
        disk.files.remove(from);
        disk.files.insert(to.to_path_buf(), inode);
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let mut disk = self.disk.lock();
        self.check_alive(&disk, path)?;
        disk.files.remove(path).ok_or_else(|| not_found(path))?;
        disk.stats.removes += 1;
        Ok(())
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let disk = self.disk.lock();
        if !disk.dir_exists(dir) {
            return Err(not_found(dir));
        }
        let mut names: Vec<String> = disk
            .files
            .keys()
            .chain(disk.dirs.iter())
            .filter(|path| path.parent() == Some(dir))
            .filter_map(|path| Some(path.file_name()?.to_str()?.to_string()))
            .collect();
        names.sort();
        Ok(names)
    }

    fn exists(&self, path: &Path) -> bool {
        let disk = self.disk.lock();
        disk.files.contains_key(path) || disk.dir_exists(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        let inode = self.disk.lock().inode(path)?;
        let size = inode.lock().data.len() as u64;
        Ok(size)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let mut disk = self.disk.lock();
        self.check_alive(&disk, dir)?;
        if disk.files.contains_key(dir) {
            return Err(Error::io(
                io::Error::new(io::ErrorKind::AlreadyExists, "a file has that name"),
                dir.display().to_string(),
            ));
        }
        for ancestor in dir.ancestors() {
            if !disk.dir_exists(ancestor) {
                disk.dirs.insert(ancestor.to_path_buf());
            }
        }
        Ok(())
    }

    fn set_len(&self, path: &Path, len: u64) -> Result<()> {
        let mut disk = self.disk.lock();
        self.check_alive(&disk, path)?;
        disk.check_fault(path)?;
        drop(disk);
        self.truncate(path, len)
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        let mut disk = self.disk.lock();
        self.check_alive(&disk, path)?;
        disk.check_fault(path)?;
        disk.stats.syncs += 1;
        let inode = disk.inode(path)?;
        let mut file = inode.lock();
        file.synced_len = file.data.len();
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let mut disk = self.disk.lock();
        self.check_alive(&disk, dir)?;
        if !disk.dir_exists(dir) {
            return Err(not_found(dir));
        }
        disk.check_fault(dir)?;
        disk.stats.dir_syncs += 1;
        // A directory renamed within `dir` takes its durable entries along.
        let renames = std::mem::take(&mut disk.unsynced_dir_renames);
        let (done, pending): (Vec<_>, Vec<_>) = renames
            .into_iter()
            .partition(|(from, to)| from.parent() == Some(dir) && to.parent() == Some(dir));
        disk.unsynced_dir_renames = pending;
        for (from, to) in &done {
            move_keys(&mut disk.durable_files, from, to);
        }
        let Disk {
            files,
            durable_files,
            ..
        } = &mut *disk;
        durable_files.retain(|path, _| path.parent() != Some(dir));
        for (path, inode) in files.iter() {
            if path.parent() == Some(dir) {
                durable_files.insert(path.clone(), Arc::clone(inode));
            }
        }
        Ok(())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let mut disk = self.disk.lock();
        self.check_alive(&disk, path)?;
        disk.check_parent(path)?;
        if disk.locks.contains_key(path) {
            return Err(Error::Locked(path.display().to_string()));
        }
        // Like PosixFs, locking creates the (empty) lock file.
        disk.files.entry(path.to_path_buf()).or_default();
        disk.next_lock_id += 1;
        let id = disk.next_lock_id;
        disk.locks.insert(path.to_path_buf(), id);
        Ok(Box::new(FaultLock {
            disk: Arc::clone(&self.disk),
            path: path.to_path_buf(),
            id,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: &str = "db";

    fn setup() -> (FaultFs, PathBuf) {
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new(DIR)).unwrap();
        (fs, PathBuf::from(DIR))
    }

    fn create(fs: &FaultFs, path: &Path) -> Box<dyn WritableFile> {
        match fs.create(path) {
            Ok(file) => file,
            Err(err) => panic!("create {}: {err}", path.display()),
        }
    }

    fn create_err(fs: &FaultFs, path: &Path) -> Error {
        match fs.create(path) {
            Ok(_) => panic!("create {} should fail", path.display()),
            Err(err) => err,
        }
    }

    #[test]
    fn power_loss_keeps_only_synced_data() {
        let (fs, dir) = setup();
        let path = dir.join("000001.log");
        let mut file = create(&fs, &path);
        fs.sync_dir(&dir).unwrap();
        file.append(b"synced ").unwrap();
        file.sync().unwrap();
        file.append(b"flushed").unwrap();
        file.flush().unwrap();
        // Flushed data is visible before the crash.
        assert_eq!(fs.read_to_vec(&path).unwrap(), b"synced flushed");
        let reader = fs.open_random(&path).unwrap();
        let mut buf = [0u8; 7];
        reader.read_exact_at(7, &mut buf).unwrap();
        assert_eq!(&buf, b"flushed");

        fs.drop_unsynced();
        assert_eq!(fs.read_to_vec(&path).unwrap(), b"synced ");
        // The dead process's handle cannot write any more.
        assert!(file.append(b"late").is_err());
        assert!(file.sync().is_err());
        assert_eq!(fs.read_to_vec(&path).unwrap(), b"synced ");
    }

    #[test]
    fn directory_entries_need_sync_dir() {
        let (fs, dir) = setup();
        let unsynced = dir.join("unsynced");
        let synced = dir.join("synced");
        fs.write_durably(&synced, b"kept").unwrap();
        fs.sync_dir(&dir).unwrap();
        fs.write_durably(&unsynced, b"data synced, entry not")
            .unwrap();
        fs.remove(&synced).unwrap();
        fs.drop_unsynced();
        assert!(!fs.exists(&unsynced));
        assert_eq!(fs.read_to_vec(&synced).unwrap(), b"kept");
        assert_eq!(fs.list(&dir).unwrap(), ["synced"]);
    }

    #[test]
    fn a_crashed_process_changes_nothing() {
        let (fs, dir) = setup();
        let kept = dir.join("000005.seg");
        fs.write_durably(&kept, b"durable").unwrap();
        fs.sync_dir(&dir).unwrap();
        let dead = fs.clone();
        let reader = dead.open_random(&kept).unwrap();
        fs.drop_unsynced();

        let refused = |result: Result<()>, what: &str| {
            let err = result.expect_err(what);
            assert!(err.to_string().contains("crashed"), "{what}: {err}");
        };
        refused(dead.remove(&kept), "remove");
        refused(dead.rename(&kept, &dir.join("x")), "rename");
        refused(dead.sync_dir(&dir), "sync_dir");
        refused(dead.sync_file(&kept), "sync_file");
        refused(dead.set_len(&kept, 0), "set_len");
        refused(dead.create(&dir.join("new")).map(|_| ()), "create");
        refused(dead.open_append(&kept).map(|_| ()), "open_append");
        refused(dead.lock(&dir.join("LOCK")).map(|_| ()), "lock");
        refused(reader.punch_hole(0, 4).map(|_| ()), "punch_hole");
        // It may still read, and nothing it tried reached the disk.
        assert_eq!(dead.read_to_vec(&kept).unwrap(), b"durable");
        assert_eq!(fs.list(&dir).unwrap(), ["000005.seg"]);

        // The next process's view works, and so does the test's own.
        let next = fs.clone();
        next.remove(&kept).unwrap();
        next.sync_dir(&dir).unwrap();
        fs.write_durably(&kept, b"again").unwrap();
        assert_eq!(next.read_to_vec(&kept).unwrap(), b"again");
    }

    #[test]
    fn rename_without_sync_dir_is_reverted() {
        let (fs, dir) = setup();
        let current = dir.join("CURRENT");
        let tmp = dir.join("000002.tmp");
        fs.write_durably(&current, b"MANIFEST-1").unwrap();
        fs.sync_dir(&dir).unwrap();

        fs.write_durably(&tmp, b"MANIFEST-2").unwrap();
        fs.rename(&tmp, &current).unwrap();
        fs.drop_unsynced();
        assert_eq!(fs.read_to_vec(&current).unwrap(), b"MANIFEST-1");
        assert!(!fs.exists(&tmp));

        fs.write_durably(&tmp, b"MANIFEST-3").unwrap();
        fs.rename(&tmp, &current).unwrap();
        fs.sync_dir(&dir).unwrap();
        fs.drop_unsynced();
        assert_eq!(fs.read_to_vec(&current).unwrap(), b"MANIFEST-3");
        assert_eq!(fs.file_names(), [current]);
    }

    #[test]
    fn a_directory_rename_is_durable_once_its_parent_is_synced() {
        let fs = FaultFs::new();
        let (building, done) = (Path::new("cp.tmp"), Path::new("cp"));
        fs.create_dir_all(building).unwrap();
        let file = building.join("CURRENT");
        fs.write_durably(&file, b"x").unwrap();
        fs.sync_dir(building).unwrap();
        fs.sync_dir(Path::new("")).unwrap();

        fs.rename(building, done).unwrap();
        assert_eq!(fs.read_to_vec(&done.join("CURRENT")).unwrap(), b"x");
        assert!(!fs.exists(building) && !fs.exists(&file));
        fs.drop_unsynced();
        assert_eq!(fs.read_to_vec(&file).unwrap(), b"x", "the rename is undone");
        assert!(!fs.exists(done));

        fs.rename(building, done).unwrap();
        fs.sync_dir(Path::new("")).unwrap();
        fs.drop_unsynced();
        assert_eq!(fs.read_to_vec(&done.join("CURRENT")).unwrap(), b"x");
        assert!(!fs.exists(building));
        assert!(fs.rename(done, done).is_err(), "the target exists");
    }

    #[test]
    fn process_crash_loses_only_buffered_bytes() {
        let (fs, dir) = setup();
        let path = dir.join("000001.log");
        let mut file = create(&fs, &path);
        file.append(b"flushed").unwrap();
        file.flush().unwrap();
        file.append(b" buffered").unwrap();
        assert_eq!(file.len(), 16);
        fs.crash_process();
        assert!(file.flush().is_err());
        // Neither synced data nor a synced directory is needed.
        assert_eq!(fs.read_to_vec(&path).unwrap(), b"flushed");
    }

    #[test]
    fn injected_no_space_surfaces_as_no_space() {
        let (fs, dir) = setup();
        let path = dir.join("f");
        let mut file = create(&fs, &path);
        fs.set_write_error(Some(FaultKind::NoSpace));
        assert!(file.append(b"x").unwrap_err().is_no_space());
        assert!(file.sync().unwrap_err().is_no_space());
        assert!(create_err(&fs, &dir.join("g")).is_no_space());
        assert!(fs.rename(&path, &dir.join("h")).unwrap_err().is_no_space());
        assert!(fs.sync_dir(&dir).unwrap_err().is_no_space());
        fs.set_write_error(Some(FaultKind::Io));
        let err = file.append(b"x").unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err:?}");
        fs.clear_faults();
        file.append(b"x").unwrap();
        file.sync().unwrap();
        assert_eq!(fs.stats().injected_failures, 6);
    }

    #[test]
    fn byte_budget_tears_the_write_that_crosses_it() {
        let (fs, dir) = setup();
        let path = dir.join("f");
        let mut file = create(&fs, &path);
        fs.fail_after_bytes(10, FaultKind::NoSpace);
        file.append(&[1u8; 6]).unwrap();
        file.flush().unwrap();
        file.append(&[2u8; 6]).unwrap();
        assert!(file.flush().unwrap_err().is_no_space());
        assert_eq!(
            fs.read_to_vec(&path).unwrap(),
            [1, 1, 1, 1, 1, 1, 2, 2, 2, 2]
        );
        // The device stays full.
        assert!(file.append(b"x").unwrap_err().is_no_space());
        fs.clear_faults();
        file.flush().unwrap();
        assert_eq!(fs.file_size(&path).unwrap(), 12);
    }

    #[test]
    fn op_budget_fails_every_later_op() {
        let (fs, dir) = setup();
        fs.fail_after_ops(2, FaultKind::Io);
        let mut file = create(&fs, &dir.join("f"));
        file.append(b"a").unwrap();
        assert!(file.append(b"b").is_err());
        assert!(file.flush().is_err());
        fs.clear_faults();
        file.flush().unwrap();
    }

    #[test]
    fn random_failures_follow_the_seed() {
        let pattern = |seed| {
            let (fs, dir) = setup();
            let mut file = create(&fs, &dir.join("f"));
            fs.set_random_failures(seed, 0.3, FaultKind::NoSpace);
            (0..200)
                .map(|_| file.append(b"x").is_err())
                .collect::<Vec<bool>>()
        };
        let first = pattern(7);
        assert_eq!(first, pattern(7));
        assert_ne!(first, pattern(8));
        let failures = first.iter().filter(|&&failed| failed).count();
        assert!((30..90).contains(&failures), "{failures} of 200");
    }

    #[test]
    fn counts_operations() {
        let (fs, dir) = setup();
        let mut file = create(&fs, &dir.join("f"));
        file.append(b"abc").unwrap();
        file.append(b"de").unwrap();
        file.sync().unwrap();
        fs.sync_dir(&dir).unwrap();
        let stats = fs.stats();
        assert_eq!(
            (stats.creates, stats.appends, stats.bytes_appended),
            (1, 2, 5)
        );
        assert_eq!(
            (stats.bytes_written, stats.syncs, stats.dir_syncs),
            (5, 1, 1)
        );
    }

    #[test]
    fn lock_is_exclusive_until_dropped_or_crash() {
        let (fs, dir) = setup();
        let path = dir.join("LOCK");
        let held = fs.lock(&path).unwrap();
        assert!(matches!(fs.lock(&path), Err(Error::Locked(_))));
        drop(held);
        let stale = fs.lock(&path).unwrap();
        fs.crash_process();
        let fresh = fs.lock(&path).unwrap();
        // The dead process's lock going away does not free the new one.
        drop(stale);
        assert!(matches!(fs.lock(&path), Err(Error::Locked(_))));
        drop(fresh);
    }

    #[test]
    fn damage_helpers() {
        let (fs, dir) = setup();
        let path = dir.join("000007.seg");
        fs.write_durably(&path, &[0x0f; 100]).unwrap();
        fs.corrupt_byte(&path, 3).unwrap();
        assert!(fs.corrupt_byte(&path, 100).is_err());
        let reader = fs.open_random(&path).unwrap();
        let mut buf = [0u8; 5];
        reader.read_exact_at(0, &mut buf).unwrap();
        assert_eq!(buf, [0x0f, 0x0f, 0x0f, 0xf0, 0x0f]);

        assert!(reader.punch_hole(10, 20).unwrap());
        reader.read_exact_at(8, &mut buf).unwrap();
        assert_eq!(buf, [0x0f, 0x0f, 0, 0, 0]);
        assert_eq!(reader.len().unwrap(), 100);

        fs.truncate(&path, 40).unwrap();
        assert!(reader
            .read_exact_at(38, &mut buf)
            .unwrap_err()
            .is_corruption());
        assert_eq!(fs.file_names(), [path]);
    }

    #[test]
    fn truncation_is_durable() {
        let (fs, dir) = setup();
        let path = dir.join("f");
        fs.write_durably(&path, &[1; 50]).unwrap();
        fs.sync_dir(&dir).unwrap();
        fs.truncate(&path, 20).unwrap();
        fs.drop_unsynced();
        assert_eq!(fs.file_size(&path).unwrap(), 20);
    }

    #[test]
    fn paths_behave_like_a_file_system() {
        let fs = FaultFs::new();
        assert!(create_err(&fs, Path::new("missing/f"))
            .to_string()
            .contains("missing"));
        fs.create_dir_all(Path::new("a/b")).unwrap();
        create(&fs, Path::new("a/x"));
        assert_eq!(fs.list(Path::new("a")).unwrap(), ["b", "x"]);
        assert!(fs.exists(Path::new("a/b")));
        assert!(fs.list(Path::new("nope")).is_err());
        assert!(fs.remove(Path::new("a/y")).is_err());
        assert!(fs.open_sequential(Path::new("a/y")).is_err());
    }
}
