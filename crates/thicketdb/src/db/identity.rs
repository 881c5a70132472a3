//! What a store's `OPTIONS` file pins for every later open, in either
//! layout: its profile and its comparator.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::key_order::BYTEWISE_NAME;
use crate::format::KeyOrder;
use crate::io::FileSystem;
use crate::options::Options;
use crate::version::files::options_path;

/// Refuses to open a store created with another profile or comparator.
pub(crate) fn check_stored_identity(
    fs: &dyn FileSystem,
    dir: &Path,
    options: &Options,
) -> Result<()> {
    let Some((stored, comparator)) = Options::load_recorded(fs, dir)? else {
        return Err(Error::corruption(
            options_path(dir),
            0,
            "OPTIONS file is missing",
        ));
    };
    if comparator != options.comparator.name() {
        return Err(Error::InvalidArgument(format!(
            "store in {} was created with comparator {comparator:?}; it cannot be opened with {:?}",
            dir.display(),
            options.comparator.name()
        )));
    }
    if stored.profile != options.profile {
        return Err(Error::InvalidArgument(format!(
            "store in {} was created with profile {:?}; it cannot be opened as {:?}",
            dir.display(),
            stored.profile.name(),
            options.profile.name()
        )));
    }
    Ok(())
}

/// The key order of the store in `dir` for the tools that open it without
/// the caller's options (`check`, `dump`): only the built-in order can be
/// known from the store alone; a custom comparator is code.
pub(crate) fn recorded_order(fs: &dyn FileSystem, dir: &Path) -> Result<KeyOrder> {
    let path = options_path(dir);
    let (_, comparator) =
        Options::decode_recorded(&path.display().to_string(), &fs.read_to_vec(&path)?)?;
    if comparator != BYTEWISE_NAME {
        return Err(Error::InvalidArgument(format!(
            "store in {} orders its keys by comparator {comparator:?}, \
             which this tool cannot load; open it with Db::open and that comparator",
            dir.display()
        )));
    }
    Ok(KeyOrder::Bytewise)
}
