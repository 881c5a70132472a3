//! A store directory whose files (CURRENT, MANIFEST, OPTIONS, logs,
//! segments) are fuzzed bytes: open, read, iterate, check, write, reopen.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use thicketdb::check::check_store_with_fs;
use thicketdb::io::fault::FaultFs;
use thicketdb::{Db, Options, ReadOptions};

fuzz_target!(|data: &[u8]| {
    let files = thicketdb_fuzz::decode_files(data);
    let fs = FaultFs::new();
    let dir = Path::new(thicketdb_fuzz::STORE_DIR);
    thicketdb_fuzz::install_files(&fs, dir, &files);
    let _ = check_store_with_fs(dir, Arc::new(fs.clone()));
    let options = Options::default().create_if_missing(false);
    let Ok(db) = Db::open_with_fs(dir, options.clone(), Arc::new(fs.clone())) else {
        return;
    };
    for (name, _) in &files {
        let _ = db.get(name.as_bytes());
    }
    if let Ok(mut iter) = db.iter(ReadOptions::default()) {
        iter.seek_to_first();
        let mut n = 0;
        while iter.valid() && n < thicketdb_fuzz::MAX_STEPS {
            let _ = (iter.key(), iter.value());
            iter.next();
            n += 1;
        }
        let _ = iter.status();
        iter.seek_to_last();
        if iter.valid() {
            iter.prev();
        }
    }
    let _ = db.put(b"fuzz", b"value");
    let _ = db.flush();
    let _ = db.close();
    if let Ok(db) = Db::open_with_fs(dir, options, Arc::new(fs)) {
        let _ = db.get(b"fuzz");
        let _ = db.close();
    }
});
