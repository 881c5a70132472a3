//! The C API (`crates/thicket-c`, LevelDB's `c.h`) driven by fuzzed calls:
//! options set to any value (negative, zero, huge, out-of-range enums),
//! NULL wherever the header allows it (handles, keys, `errptr`,
//! `vallen`), keys and values of any bytes and length, batches, iterators
//! walked past their ends, snapshots, keyspaces of fuzzed names, close and
//! reopen. Every call must return or report an error; none may panic (a
//! panic caught at the boundary still aborts here: libFuzzer's hook), and
//! reads must agree with a `BTreeMap` model of the default keyspace.
#![no_main]

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::path::PathBuf;
use std::ptr::{null, null_mut};
use std::sync::OnceLock;

use libc::{c_char, size_t};
use libfuzzer_sys::fuzz_target;
use thicket::*;

/// The fuzzed bytes, read front to back (zeros once they run out).
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    fn done(&self) -> bool {
        self.0.is_empty()
    }

    /// A key or value: a length byte, then that many bytes (few distinct
    /// short keys when the length's top bit is set, so keys repeat).
    fn bytes(&mut self) -> Vec<u8> {
        let n = self.byte();
        if n & 0x80 != 0 {
            return vec![b'k', n & 0x07];
        }
        let n = usize::from(n & 0x3f).min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head.to_vec()
    }
}

/// Pointer and length of `b`; a NULL pointer (with a fuzzed length, which
/// the API must ignore) when `null`.
fn raw(b: &[u8], null: bool, junk_len: u8) -> (*const c_char, size_t) {
    if null {
        (std::ptr::null(), usize::from(junk_len))
    } else {
        (b.as_ptr().cast(), b.len())
    }
}

/// Takes the error message, if any, and fails on one that is a panic the
/// boundary caught (the guard's "internal error").
fn take_error(err: &mut *mut c_char) -> Option<String> {
    if err.is_null() {
        return None;
    }
    // SAFETY: the API stores a malloc'ed NUL-terminated string.
    let message = unsafe { CStr::from_ptr(*err) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: malloc'ed by the API, freed once.
    unsafe { leveldb_free((*err).cast()) };
    *err = null_mut();
    assert!(!message.contains("internal error"), "{message}");
    Some(message)
}

fn store_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        base.join(format!("thicket-fuzz-c-api-{}", std::process::id()))
    })
}

/// The value the C API returned (malloc'ed), freed.
fn take_value(ptr: *mut c_char, len: size_t) -> Option<Vec<u8>> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: the API returned `len` malloc'ed bytes.
    let v = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }.to_vec();
    // SAFETY: malloc'ed by the API, freed once.
    unsafe { leveldb_free(ptr.cast()) };
    Some(v)
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn remove_range(model: &mut Model, start: &[u8], end: &[u8]) {
    if start < end {
        let doomed: Vec<Vec<u8>> = model
            .range(start.to_vec()..end.to_vec())
            .map(|(k, _)| k.clone())
            .collect();
        for k in doomed {
            model.remove(&k);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let dir = store_dir();
    let name = CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    let mut err: *mut c_char = null_mut();
    // SAFETY (this block and the calls below): every pointer passed is
    // NULL where the header allows it, or a live object of this library,
    // or points to as many bytes as the length passed says.
    unsafe {
        leveldb_destroy_db(null(), name.as_ptr(), &mut err);
        take_error(&mut err);

        let options = leveldb_options_create();
        leveldb_options_set_create_if_missing(options, 1);
        let mut cache: *mut leveldb_cache_t = null_mut();
        let mut policy: *mut leveldb_filterpolicy_t = null_mut();
        for _ in 0..(input.byte() % 8) {
            let v = input.u32();
            match input.byte() % 9 {
                0 => leveldb_options_set_write_buffer_size(options, v as size_t),
                1 => leveldb_options_set_max_open_files(options, v as i32),
                2 => leveldb_options_set_block_size(options, v as size_t),
                3 => leveldb_options_set_block_restart_interval(options, v as i32),
                4 => leveldb_options_set_max_file_size(options, v as size_t),
                5 => leveldb_options_set_compression(options, v as i32),
                6 => leveldb_options_set_error_if_exists(options, v as u8),
                7 if cache.is_null() => {
                    cache = leveldb_cache_create_lru(v as size_t);
                    leveldb_options_set_cache(options, cache);
                }
                8 if policy.is_null() => {
                    policy = leveldb_filterpolicy_create_bloom(v as i32);
                    leveldb_options_set_filter_policy(options, policy);
                }
                _ => {}
            }
        }
        // NULL objects are ignored.
        leveldb_options_set_write_buffer_size(null_mut(), 1);
        let mut db = leveldb_open(options, name.as_ptr(), &mut err);
        if take_error(&mut err).is_some() {
            assert!(db.is_null());
            // Options the store refuses: with sane ones it opens.
            leveldb_options_set_write_buffer_size(options, 1 << 20);
            leveldb_options_set_block_size(options, 4096);
            leveldb_options_set_block_restart_interval(options, 16);
            leveldb_options_set_max_file_size(options, 2 << 20);
            leveldb_options_set_max_open_files(options, 1000);
            leveldb_options_set_compression(options, 0);
            leveldb_options_set_error_if_exists(options, 0);
            db = leveldb_open(options, name.as_ptr(), &mut err);
            if let Some(e) = take_error(&mut err) {
                // A cache or filter of a fuzzed size may still be refused.
                assert!(e.starts_with("Invalid argument"), "{e}");
                leveldb_options_destroy(options);
                leveldb_cache_destroy(cache);
                leveldb_filterpolicy_destroy(policy);
                return;
            }
        }
        let wo = leveldb_writeoptions_create();
        let ro = leveldb_readoptions_create();
        let mut model = Model::new();
        let mut keyspaces: Vec<*mut leveldb_keyspace_t> = Vec::new();
        let mut steps = 0;
        while !input.done() && steps < 200 {
            steps += 1;
            let op = input.byte();
            let nulls = input.byte();
            // A NULL `errptr` now and then: the call must still not crash.
            let errp: *mut *mut c_char = if nulls & 0x40 != 0 {
                null_mut()
            } else {
                &mut err
            };
            match op % 16 {
                0 | 1 => {
                    let (k, v) = (input.bytes(), input.bytes());
                    let (kp, kl) = raw(&k, nulls & 1 != 0, nulls);
                    let (vp, vl) = raw(&v, nulls & 2 != 0, nulls);
                    leveldb_put(db, wo, kp, kl, vp, vl, errp);
                    if take_error(&mut err).is_none() && !errp.is_null() {
                        let k = if kp.is_null() { Vec::new() } else { k };
                        let v = if vp.is_null() { Vec::new() } else { v };
                        model.insert(k, v);
                    } else if errp.is_null() {
                        // Unknown outcome: read it back to resync the model.
                        let k = if kp.is_null() { Vec::new() } else { k };
                        resync(db, ro, &mut model, &k);
                    }
                }
                2 => {
                    let k = input.bytes();
                    let (kp, kl) = raw(&k, nulls & 1 != 0, nulls);
                    leveldb_delete(db, wo, kp, kl, &mut err);
                    if take_error(&mut err).is_none() {
                        model.remove(if kp.is_null() { &[][..] } else { &k[..] });
                    }
                }
                3 => {
                    let (a, b) = (input.bytes(), input.bytes());
                    let (ap, al) = raw(&a, nulls & 1 != 0, nulls);
                    let (bp, bl) = raw(&b, nulls & 2 != 0, nulls);
                    leveldb_delete_range(db, wo, ap, al, bp, bl, &mut err);
                    if take_error(&mut err).is_none() {
                        let a = if ap.is_null() { Vec::new() } else { a };
                        let b = if bp.is_null() { Vec::new() } else { b };
                        remove_range(&mut model, &a, &b);
                    }
                }
                4 | 5 => {
                    let k = input.bytes();
                    let (kp, kl) = raw(&k, nulls & 1 != 0, nulls);
                    let mut len: size_t = 0;
                    let lenp: *mut size_t = if nulls & 2 != 0 { null_mut() } else { &mut len };
                    let v = leveldb_get(db, ro, kp, kl, lenp, &mut err);
                    let e = take_error(&mut err);
                    if lenp.is_null() {
                        if !v.is_null() {
                            leveldb_free(v.cast());
                        }
                    } else if e.is_none() {
                        let got = take_value(v, len);
                        let k = if kp.is_null() { Vec::new() } else { k };
                        assert_eq!(got.as_ref(), model.get(&k), "get {k:?}");
                    }
                }
                6 => {
                    let batch = leveldb_writebatch_create();
                    let mut staged = model.clone();
                    for _ in 0..(input.byte() % 8) {
                        let (k, v) = (input.bytes(), input.bytes());
                        match input.byte() % 4 {
                            0 | 1 => {
                                leveldb_writebatch_put(
                                    batch,
                                    k.as_ptr().cast(),
                                    k.len(),
                                    v.as_ptr().cast(),
                                    v.len(),
                                );
                                staged.insert(k, v);
                            }
                            2 => {
                                leveldb_writebatch_delete(batch, k.as_ptr().cast(), k.len());
                                staged.remove(&k);
                            }
                            _ => {
                                leveldb_writebatch_delete_range(
                                    batch,
                                    k.as_ptr().cast(),
                                    k.len(),
                                    v.as_ptr().cast(),
                                    v.len(),
                                );
                                remove_range(&mut staged, &k, &v);
                            }
                        }
                    }
                    if nulls & 1 != 0 {
                        // NULL batch and NULL batch objects.
                        leveldb_writebatch_put(null_mut(), null(), 3, null(), 3);
                        leveldb_write(db, wo, null_mut(), &mut err);
                        assert!(take_error(&mut err).is_some(), "a NULL batch is refused");
                    }
                    leveldb_write(db, wo, batch, &mut err);
                    if take_error(&mut err).is_none() {
                        model = staged;
                    }
                    leveldb_writebatch_destroy(batch);
                }
                7 | 8 => {
                    let it = leveldb_create_iterator(db, ro);
                    check_iter(it, &model, &mut input);
                    leveldb_iter_destroy(it);
                }
                9 => {
                    let snap = leveldb_create_snapshot(db);
                    let frozen = model.clone();
                    let (k, v) = (input.bytes(), input.bytes());
                    leveldb_put(
                        db,
                        wo,
                        k.as_ptr().cast(),
                        k.len(),
                        v.as_ptr().cast(),
                        v.len(),
                        &mut err,
                    );
                    if take_error(&mut err).is_none() {
                        model.insert(k.clone(), v);
                    }
                    let sro = leveldb_readoptions_create();
                    leveldb_readoptions_set_snapshot(sro, snap);
                    let mut len = 0;
                    let got = leveldb_get(db, sro, k.as_ptr().cast(), k.len(), &mut len, &mut err);
                    if take_error(&mut err).is_none() {
                        assert_eq!(take_value(got, len).as_ref(), frozen.get(&k), "at snapshot");
                    }
                    let it = leveldb_create_iterator(db, sro);
                    check_iter(it, &frozen, &mut input);
                    leveldb_iter_destroy(it);
                    leveldb_readoptions_destroy(sro);
                    leveldb_release_snapshot(db, snap);
                }
                10 => {
                    let (a, b) = (input.bytes(), input.bytes());
                    let (ap, al) = raw(&a, nulls & 1 != 0, nulls);
                    let (bp, bl) = raw(&b, nulls & 2 != 0, nulls);
                    leveldb_compact_range(db, ap, al, bp, bl);
                    let starts = [a.as_ptr().cast::<c_char>()];
                    let lens = [a.len()];
                    let limits = [b.as_ptr().cast::<c_char>()];
                    let limit_lens = [b.len()];
                    let mut sizes = [0u64];
                    leveldb_approximate_sizes(
                        db,
                        1,
                        starts.as_ptr(),
                        lens.as_ptr(),
                        limits.as_ptr(),
                        limit_lens.as_ptr(),
                        sizes.as_mut_ptr(),
                    );
                }
                11 => {
                    let mut prop = input.bytes();
                    prop.retain(|&c| c != 0);
                    if nulls & 1 != 0 {
                        prop = b"leveldb.stats".to_vec();
                    }
                    let prop = CString::new(prop).unwrap();
                    let v = leveldb_property_value(db, prop.as_ptr());
                    if !v.is_null() {
                        leveldb_free(v.cast());
                    }
                    assert!(leveldb_property_value(null_mut(), prop.as_ptr()).is_null());
                }
                12 => {
                    // Close and reopen: everything written is still there.
                    for ks in keyspaces.drain(..) {
                        leveldb_keyspace_handle_destroy(ks);
                    }
                    leveldb_close(db);
                    // The store exists now: a fuzzed `error_if_exists`
                    // would refuse it (rightly).
                    leveldb_options_set_error_if_exists(options, 0);
                    db = leveldb_open(options, name.as_ptr(), &mut err);
                    if let Some(e) = take_error(&mut err) {
                        panic!("reopen: {e}");
                    }
                    let it = leveldb_create_iterator(db, ro);
                    leveldb_iter_seek_to_first(it);
                    for (k, v) in &model {
                        assert!(leveldb_iter_valid(it) != 0, "lost {k:?} on reopen");
                        assert_eq!(iter_entry(it), (k.clone(), v.clone()));
                        leveldb_iter_next(it);
                    }
                    assert_eq!(leveldb_iter_valid(it), 0, "extra entries on reopen");
                    leveldb_iter_destroy(it);
                }
                13 => {
                    // A keyspace of a fuzzed name (not the default one's
                    // model), written and read through.
                    let mut n = input.bytes();
                    n.retain(|&c| c != 0);
                    let n = CString::new(n).unwrap();
                    let ks = if nulls & 1 != 0 {
                        leveldb_open_keyspace(db, n.as_ptr(), &mut err)
                    } else {
                        leveldb_create_keyspace(db, options, n.as_ptr(), &mut err)
                    };
                    if take_error(&mut err).is_none() && !ks.is_null() {
                        let (k, v) = (input.bytes(), input.bytes());
                        leveldb_put_in(
                            db,
                            wo,
                            ks,
                            k.as_ptr().cast(),
                            k.len(),
                            v.as_ptr().cast(),
                            v.len(),
                            &mut err,
                        );
                        if take_error(&mut err).is_none() {
                            let mut len = 0;
                            let got = leveldb_get_in(
                                db,
                                ro,
                                ks,
                                k.as_ptr().cast(),
                                k.len(),
                                &mut len,
                                &mut err,
                            );
                            if take_error(&mut err).is_none() {
                                assert_eq!(take_value(got, len), Some(v));
                            }
                        }
                        let mut len = 0;
                        let got = leveldb_keyspace_name(ks, &mut len);
                        take_value(got, len);
                        keyspaces.push(ks);
                    }
                }
                14 => {
                    if let Some(ks) = keyspaces.pop() {
                        leveldb_drop_keyspace(db, ks, &mut err);
                        let dropped = take_error(&mut err).is_none();
                        let mut len = 0;
                        let got =
                            leveldb_get_in(db, ro, ks, b"k".as_ptr().cast(), 1, &mut len, &mut err);
                        let e = take_error(&mut err);
                        if dropped {
                            assert!(e.is_some(), "a read through a dropped keyspace's handle");
                        } else {
                            take_value(got, len);
                        }
                        leveldb_keyspace_handle_destroy(ks);
                    }
                }
                _ => {
                    // NULL stores, iterators and snapshots are reported or
                    // ignored.
                    leveldb_put(null_mut(), wo, null(), 0, null(), 0, &mut err);
                    assert!(take_error(&mut err).is_some());
                    let mut len = 0;
                    assert!(leveldb_get(null_mut(), ro, null(), 0, &mut len, &mut err).is_null());
                    assert!(take_error(&mut err).is_some());
                    leveldb_iter_seek_to_first(null_mut());
                    leveldb_iter_next(null_mut());
                    assert_eq!(leveldb_iter_valid(null()), 0);
                    assert!(leveldb_create_snapshot(null_mut()).is_null());
                    leveldb_release_snapshot(db, null());
                    leveldb_compact_range(null_mut(), null(), 0, null(), 0);
                }
            }
        }
        for ks in keyspaces.drain(..) {
            leveldb_keyspace_handle_destroy(ks);
        }
        leveldb_close(db);
        leveldb_writeoptions_destroy(wo);
        leveldb_readoptions_destroy(ro);
        leveldb_options_destroy(options);
        leveldb_cache_destroy(cache);
        leveldb_filterpolicy_destroy(policy);
        leveldb_destroy_db(null(), name.as_ptr(), &mut err);
        take_error(&mut err);
    }
});

/// Reads `k` back into the model after a write whose outcome was not
/// reported (a NULL `errptr`).
unsafe fn resync(
    db: *mut leveldb_t,
    ro: *const leveldb_readoptions_t,
    model: &mut Model,
    k: &[u8],
) {
    let mut err = null_mut();
    let mut len = 0;
    // SAFETY: live objects; `k` holds `k.len()` bytes.
    let v = unsafe { leveldb_get(db, ro, k.as_ptr().cast(), k.len(), &mut len, &mut err) };
    assert!(take_error(&mut err).is_none());
    match take_value(v, len) {
        Some(v) => model.insert(k.to_vec(), v),
        None => model.remove(k),
    };
}

/// The iterator's key and value (it must be valid).
unsafe fn iter_entry(it: *mut leveldb_iterator_t) -> (Vec<u8>, Vec<u8>) {
    let (mut kl, mut vl) = (0, 0);
    // SAFETY: a live, valid iterator; key and value stay valid until it moves.
    unsafe {
        let k = leveldb_iter_key(it, &mut kl);
        let v = leveldb_iter_value(it, &mut vl);
        (
            std::slice::from_raw_parts(k.cast::<u8>(), kl).to_vec(),
            std::slice::from_raw_parts(v.cast::<u8>(), vl).to_vec(),
        )
    }
}

/// A random walk of the iterator, each position checked against `model`,
/// including moves past either end.
unsafe fn check_iter(it: *mut leveldb_iterator_t, model: &Model, input: &mut Input) {
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    // Index into `keys` of the expected position; None: invalid.
    let mut pos: Option<usize>;
    // SAFETY: `it` is a live iterator; key pointers are read only while valid.
    unsafe {
        match input.byte() % 3 {
            0 => {
                leveldb_iter_seek_to_first(it);
                pos = (!keys.is_empty()).then_some(0);
            }
            1 => {
                leveldb_iter_seek_to_last(it);
                pos = keys.len().checked_sub(1);
            }
            _ => {
                let t = input.bytes();
                leveldb_iter_seek(it, t.as_ptr().cast(), t.len());
                let at = keys.partition_point(|k| k.as_slice() < t.as_slice());
                pos = (at < keys.len()).then_some(at);
            }
        }
        for _ in 0..(input.byte() % 16) {
            match pos {
                Some(p) => {
                    assert!(leveldb_iter_valid(it) != 0, "expected {:?}", keys[p]);
                    let (k, v) = iter_entry(it);
                    assert_eq!(&k, keys[p]);
                    assert_eq!(Some(&v), model.get(&k));
                }
                None => {
                    assert_eq!(leveldb_iter_valid(it), 0, "expected the end");
                    // Moving an invalid iterator is a no-op, as in LevelDB.
                    let (mut kl, mut vl) = (0, 0);
                    let _ = (
                        leveldb_iter_key(it, &mut kl),
                        leveldb_iter_value(it, &mut vl),
                    );
                    break;
                }
            }
            let p = pos.unwrap();
            if input.byte() & 1 == 0 {
                leveldb_iter_next(it);
                pos = (p + 1 < keys.len()).then_some(p + 1);
            } else {
                leveldb_iter_prev(it);
                pos = p.checked_sub(1);
            }
        }
        let mut err = null_mut();
        leveldb_iter_get_error(it, &mut err);
        assert!(take_error(&mut err).is_none());
    }
}
