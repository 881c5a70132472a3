//! A file system for tests that counts what is read from chosen files
//! (bytes and read calls, and opens for scattered reads), over another,
//! and can call a hook as one of them is created (to hold a task there).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{FileLock, FileSystem, RandomAccessFile, SequentialFile, WritableFile};
use crate::error::Result;

/// What was read from the counted files.
#[derive(Default)]
pub struct Reads {
    bytes: AtomicU64,
    calls: AtomicU64,
    scattered_opens: AtomicU64,
}

impl Reads {
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
    /// Opens through `open_random_scattered`.
    pub fn scattered_opens(&self) -> u64 {
        self.scattered_opens.load(Ordering::Relaxed)
    }
    fn note(&self, bytes: usize) {
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        self.calls.fetch_add(1, Ordering::Relaxed);
    }
}

/// Called with the path of a counted file about to be created.
pub type CreateHook = Box<dyn Fn(&Path) + Send + Sync>;

/// `inner`, counting reads of the files `counted` picks.
pub struct CountingFs {
    inner: Arc<dyn FileSystem>,
    counted: fn(&Path) -> bool,
    reads: Arc<Reads>,
    on_create: Option<CreateHook>,
}

impl CountingFs {
    pub fn new(inner: Arc<dyn FileSystem>, counted: fn(&Path) -> bool) -> CountingFs {
        CountingFs {
            inner,
            counted,
            reads: Arc::default(),
            on_create: None,
        }
    }

    /// Calls `hook` (in the creating thread) before a counted file is
    /// created.
    pub fn with_create_hook(self, hook: CreateHook) -> CountingFs {
        CountingFs {
            on_create: Some(hook),
            ..self
        }
    }

    fn note_create(&self, path: &Path) {
        if let Some(hook) = self.on_create.as_ref().filter(|_| (self.counted)(path)) {
            hook(path);
        }
    }

    pub fn reads(&self) -> Arc<Reads> {
        self.reads.clone()
    }

    fn wrap(&self, path: &Path, file: Arc<dyn RandomAccessFile>) -> Arc<dyn RandomAccessFile> {
        match (self.counted)(path) {
            true => Arc::new(CountedRandom {
                inner: file,
                reads: self.reads.clone(),
            }),
            false => file,
        }
    }
}

struct CountedRandom {
    inner: Arc<dyn RandomAccessFile>,
    reads: Arc<Reads>,
}

impl RandomAccessFile for CountedRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.reads.note(buf.len());
        self.inner.read_exact_at(offset, buf)
    }
    fn len(&self) -> Result<u64> {
        self.inner.len()
    }
    fn punch_hole(&self, offset: u64, len: u64) -> Result<bool> {
        self.inner.punch_hole(offset, len)
    }
}

struct CountedSequential {
    inner: Box<dyn SequentialFile>,
    reads: Arc<Reads>,
}

impl SequentialFile for CountedSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let n = self.inner.read(buf)?;
        self.reads.note(n);
        Ok(n)
    }
}

impl FileSystem for CountingFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.note_create(path);
        self.inner.create(path)
    }
    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.inner.open_append(path)
    }
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(self.wrap(path, self.inner.open_random(path)?))
    }
    fn open_random_scattered(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        if (self.counted)(path) {
            self.reads.scattered_opens.fetch_add(1, Ordering::Relaxed);
        }
        Ok(self.wrap(path, self.inner.open_random_scattered(path)?))
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let inner = self.inner.open_sequential(path)?;
        Ok(match (self.counted)(path) {
            true => Box::new(CountedSequential {
                inner,
                reads: self.reads.clone(),
            }),
            false => inner,
        })
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        self.inner.remove(path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn set_len(&self, path: &Path, len: u64) -> Result<()> {
        self.inner.set_len(path, len)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.inner.sync_dir(dir)
    }
    fn sync_file(&self, path: &Path) -> Result<()> {
        self.inner.sync_file(path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}
