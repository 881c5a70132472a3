//! The in-memory file system of the power-loss mode: a `FaultFs` seen
//! through one simulated process. After `crash`, everything that process
//! still tries to change (files it creates, renames or removes on its way
//! down) is refused, as a dead process changes nothing.

use std::io;
use std::path::Path;
use std::sync::{Arc, RwLock};

use thicketdb::io::fault::FaultFs;
use thicketdb::io::{FileLock, FileSystem, RandomAccessFile, SequentialFile, WritableFile};
use thicketdb::{Error, Result};

/// How the simulated process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crash {
    /// Unsynced data and directory entries are lost.
    PowerLoss,
    /// Only bytes still buffered in the process are lost.
    Process,
}

#[derive(Clone)]
pub struct ProcessFs {
    fs: FaultFs,
    dead: Arc<RwLock<bool>>,
}

impl ProcessFs {
    pub fn new(fs: FaultFs) -> ProcessFs {
        ProcessFs {
            fs,
            dead: Arc::new(RwLock::new(false)),
        }
    }

    /// Ends the process: no change it makes from now on takes effect.
    pub fn crash(&self, how: Crash) {
        let mut dead = self.dead.write().unwrap_or_else(|e| e.into_inner());
        *dead = true;
        match how {
            Crash::PowerLoss => self.fs.drop_unsynced(),
            Crash::Process => self.fs.crash_process(),
        }
    }

    /// Runs a change unless the process is dead (holding off `crash` while
    /// it runs, so a change is wholly before or after it).
    fn change<T>(&self, path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let dead = self.dead.read().unwrap_or_else(|e| e.into_inner());
        if *dead {
            return Err(Error::io(
                io::Error::other("the process crashed (simulated)"),
                path.display().to_string(),
            ));
        }
        f()
    }
}

impl FileSystem for ProcessFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.change(path, || self.fs.create(path))
    }
    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.change(path, || self.fs.open_append(path))
    }
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.fs.open_random(path)
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.fs.open_sequential(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.change(from, || self.fs.rename(from, to))
    }
    fn remove(&self, path: &Path) -> Result<()> {
        self.change(path, || self.fs.remove(path))
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.fs.list(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.fs.exists(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.fs.file_size(path)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.change(dir, || self.fs.create_dir_all(dir))
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.change(dir, || self.fs.sync_dir(dir))
    }
    fn set_len(&self, path: &Path, len: u64) -> Result<()> {
        self.change(path, || self.fs.set_len(path, len))
    }
    fn sync_file(&self, path: &Path) -> Result<()> {
        self.change(path, || self.fs.sync_file(path))
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.change(path, || self.fs.lock(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_process_changes_nothing() {
        let fault = FaultFs::new();
        let dir = Path::new("d");
        let p = ProcessFs::new(fault.clone());
        p.create_dir_all(dir).unwrap();
        p.write_durably(&dir.join("a"), b"synced").unwrap();
        p.sync_dir(dir).unwrap();
        let mut f = p.create(&dir.join("b")).unwrap();
        f.append(b"x").unwrap();
        p.crash(Crash::PowerLoss);
        assert!(f.sync().is_err());
        assert!(p.remove(&dir.join("a")).is_err());
        assert!(p.create(&dir.join("c")).is_err());
        assert_eq!(fault.list(dir).unwrap(), ["a"]);
        let next = ProcessFs::new(fault);
        next.remove(&dir.join("a")).unwrap();
        assert!(!next.exists(&dir.join("a")));
    }
}
