//! Destroying a store: every file the engine knows by name, then the
//! directory when nothing else is left in it (LevelDB's `DestroyDB`).

use std::path::Path;

use crate::error::{Error, Result};
use crate::io::{FileSystem, PosixFs};
use crate::version::files::{lock_path, parse_file_name, FileKind};

/// Deletes the store in `dir`. A missing directory is not an error; a store
/// open elsewhere is (`Error::Locked`). Files the engine does not own stay.
pub fn destroy(dir: impl AsRef<Path>) -> Result<()> {
    let dir = dir.as_ref();
    let fs = PosixFs;
    if !dir.exists() {
        return Ok(());
    }
    let lock = fs.lock(&lock_path(dir))?;
    let mut first_error = None;
    for name in fs.list(dir)? {
        match parse_file_name(&name) {
            None | Some(FileKind::Lock) => {}
            Some(_) => {
                if let Err(e) = fs.remove(&dir.join(&name)) {
                    first_error.get_or_insert(e);
                }
            }
        }
    }
    drop(lock);
    let _ = fs.remove(&lock_path(dir));
    // Fails when foreign files remain, which LevelDB ignores as well.
    let _ = std::fs::remove_dir(dir);
    first_error.map_or(Ok(()), Err::<(), Error>)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Db;
    use crate::options::Options;

    #[test]
    fn destroy_removes_the_store_and_refuses_an_open_one() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("db");
        let db = Db::open(&dir, Options::default()).unwrap();
        db.put(b"k", b"v").unwrap();
        assert!(matches!(destroy(&dir), Err(Error::Locked(_))));
        db.close().unwrap();
        destroy(&dir).unwrap();
        assert!(!dir.exists());
        destroy(&dir).unwrap();

        let db = Db::open(&dir, Options::default()).unwrap();
        db.close().unwrap();
        std::fs::write(dir.join("notes.txt"), b"mine").unwrap();
        destroy(&dir).unwrap();
        assert_eq!(std::fs::read(dir.join("notes.txt")).unwrap(), b"mine");
        assert!(!dir.join("CURRENT").exists());
    }
}
