//! The data API that `Db` (on its default keyspace) and
//! `Keyspace` share, written once: `data_api!()` inside an `impl` block
//! whose type has `fn db(&self) -> &Db`, `fn target(&self) -> Target` and
//! `fn handle(&self) -> Keyspace`.

macro_rules! data_api {
    () => {
        /// Sets `key` to `value`.
        pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
            self.put_opt(key, value, WriteOptions::default())
        }

        /// `put` with per-write options.
        pub fn put_opt(
            &self,
            key: impl AsRef<[u8]>,
            value: impl AsRef<[u8]>,
            opts: WriteOptions,
        ) -> Result<()> {
            let id = self.keyspace_id()?;
            let (key, value) = (key.as_ref(), value.as_ref());
            let mut batch = WriteBatch::with_capacity(key.len() + value.len());
            batch.put_to(id, key, value)?;
            self.db().write_opt(batch, opts)
        }

        /// Removes `key` (a no-op when absent).
        pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
            self.delete_opt(key, WriteOptions::default())
        }

        /// `delete` with per-write options.
        pub fn delete_opt(&self, key: impl AsRef<[u8]>, opts: WriteOptions) -> Result<()> {
            let id = self.keyspace_id()?;
            let key = key.as_ref();
            let mut batch = WriteBatch::with_capacity(key.len());
            batch.delete_to(id, key)?;
            self.db().write_opt(batch, opts)
        }

        /// Deletes every key in `[start, end)` (RocksDB's `DeleteRange`) with
        /// one range tombstone, however many keys the range holds. Snapshots
        /// taken before it still see the keys. Needs the built-in byte order:
        /// a store with a custom comparator returns `InvalidArgument`.
        ///
        /// ```
        /// # let dir = tempfile::tempdir().unwrap();
        /// let db = thicketdb::Db::open(dir.path(), thicketdb::Options::default())?;
        /// for k in ["a", "b", "c", "d"] {
        ///     db.put(k, "v")?;
        /// }
        /// db.delete_range("b", "d")?;
        /// let keys: Vec<_> = db.range::<&str, _>(..)?.map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
        /// assert_eq!(keys, [b"a".to_vec(), b"d".to_vec()]);
        /// # Ok::<(), thicketdb::Error>(())
        /// ```
        pub fn delete_range(&self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
            self.delete_range_opt(start, end, WriteOptions::default())
        }

        /// `delete_range` with per-write options.
        pub fn delete_range_opt(
            &self,
            start: impl AsRef<[u8]>,
            end: impl AsRef<[u8]>,
            opts: WriteOptions,
        ) -> Result<()> {
            let id = self.keyspace_id()?;
            let (start, end) = (start.as_ref(), end.as_ref());
            let mut batch = WriteBatch::with_capacity(start.len() + end.len());
            batch.delete_range_to(id, start, end)?;
            self.db().write_opt(batch, opts)
        }

        /// The value of `key`, or `None`.
        pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
            self.get_opt(key, &ReadOptions::default())
        }

        /// `get` with per-read options (a snapshot; bounds do not apply).
        pub fn get_opt(
            &self,
            key: impl AsRef<[u8]>,
            opts: &ReadOptions,
        ) -> Result<Option<Vec<u8>>> {
            match self.target() {
                Target::Tree(inner, tree) => {
                    crate::db::lsm::read::get(inner, tree, key.as_ref(), opts)
                }
                Target::Chunked(store, space) => store.get(space, key.as_ref(), opts),
            }
        }

        /// Hands the value of `key` to `f` without copying it when it is read
        /// from a table (it is borrowed from the cached block); `None` when
        /// absent. Cheaper than `get` when the caller needs no owned value
        /// (`docs/benchmarks.md`, *Borrowed get*).
        ///
        /// ```
        /// # let dir = tempfile::tempdir().unwrap();
        /// let db = thicketdb::Db::open(dir.path(), thicketdb::Options::default())?;
        /// db.put("k", "a long value")?;
        /// assert_eq!(db.get_with("k", |v| v.len())?, Some(12));
        /// assert_eq!(db.get_with("absent", |v| v.len())?, None);
        /// # Ok::<(), thicketdb::Error>(())
        /// ```
        pub fn get_with<R>(
            &self,
            key: impl AsRef<[u8]>,
            f: impl FnOnce(&[u8]) -> R,
        ) -> Result<Option<R>> {
            self.get_with_opt(key, &ReadOptions::default(), f)
        }

        /// `get_with` with per-read options.
        pub fn get_with_opt<R>(
            &self,
            key: impl AsRef<[u8]>,
            opts: &ReadOptions,
            f: impl FnOnce(&[u8]) -> R,
        ) -> Result<Option<R>> {
            match self.target() {
                Target::Tree(inner, tree) => {
                    crate::db::lsm::read::get_with(inner, tree, key.as_ref(), opts, f)
                }
                Target::Chunked(store, space) => {
                    Ok(store.get(space, key.as_ref(), opts)?.map(|v| f(&v)))
                }
            }
        }

        /// The values of `keys`, in order, all read at one point of the write
        /// order (one snapshot), as RocksDB's `MultiGet`.
        ///
        /// ```
        /// # let dir = tempfile::tempdir().unwrap();
        /// let db = thicketdb::Db::open(dir.path(), thicketdb::Options::default())?;
        /// db.put("a", "1")?;
        /// let values: Vec<_> = db.multi_get(["a", "b"]).into_iter().collect::<Result<_, _>>()?;
        /// assert_eq!(values, [Some(b"1".to_vec()), None]);
        /// # Ok::<(), thicketdb::Error>(())
        /// ```
        pub fn multi_get<K: AsRef<[u8]>>(
            &self,
            keys: impl IntoIterator<Item = K>,
        ) -> Vec<Result<Option<Vec<u8>>>> {
            self.multi_get_opt(keys, &ReadOptions::default())
        }

        /// `multi_get` with per-read options; without a snapshot in `opts` it
        /// takes one, so that every key is read at the same point.
        pub fn multi_get_opt<K: AsRef<[u8]>>(
            &self,
            keys: impl IntoIterator<Item = K>,
            opts: &ReadOptions,
        ) -> Vec<Result<Option<Vec<u8>>>> {
            let pinned;
            let opts = match opts.snapshot {
                Some(_) => opts,
                None => {
                    pinned = ReadOptions {
                        snapshot: Some(self.db().snapshot()),
                        ..opts.clone()
                    };
                    &pinned
                }
            };
            keys.into_iter().map(|k| self.get_opt(k, opts)).collect()
        }

        /// An iterator over user keys within the bounds of `opts`; call a seek
        /// method before reading.
        pub fn iter(&self, opts: ReadOptions) -> Result<DbIterator> {
            match self.target() {
                Target::Tree(inner, tree) => crate::db::lsm::iter_sources::new(inner, tree, opts),
                Target::Chunked(store, space) => store.iter(space, opts),
            }
        }

        /// The pairs whose keys lie in `range` (`..`, `a..b`, `a..=b`, …),
        /// read at one snapshot, as a double-ended iterator.
        ///
        /// ```
        /// # let dir = tempfile::tempdir().unwrap();
        /// let db = thicketdb::Db::open(dir.path(), thicketdb::Options::default())?;
        /// for k in ["a", "b", "c", "d"] {
        ///     db.put(k, k.to_uppercase())?;
        /// }
        /// let keys: Vec<Vec<u8>> = db
        ///     .range("b"..="c")?
        ///     .map(|pair| pair.map(|(k, _)| k))
        ///     .collect::<thicketdb::Result<_>>()?;
        /// assert_eq!(keys, [b"b".to_vec(), b"c".to_vec()]);
        /// let last = db.range::<&str, _>(..)?.next_back().transpose()?;
        /// assert_eq!(last, Some((b"d".to_vec(), b"D".to_vec())));
        /// # Ok::<(), thicketdb::Error>(())
        /// ```
        pub fn range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
            &self,
            range: R,
        ) -> Result<Range> {
            self.range_opt(range, &ReadOptions::default())
        }

        /// `range` with per-read options (a snapshot, `fill_cache`); the range
        /// replaces the options' bounds.
        ///
        /// Under a custom comparator an excluded start or an included end is
        /// refused: those bounds are computed in byte order.
        pub fn range_opt<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
            &self,
            range: R,
            opts: &ReadOptions,
        ) -> Result<Range> {
            range::range_in(self.handle(), range, opts.clone())
        }

        /// The pairs whose keys start with `prefix`, as `range`.
        pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Result<Range> {
            self.prefix_opt(prefix, &ReadOptions::default())
        }

        /// `prefix` with per-read options; the prefix replaces their bounds.
        /// Refused under a custom comparator, whose keys sharing a prefix need
        /// not be adjacent.
        pub fn prefix_opt(&self, prefix: impl AsRef<[u8]>, opts: &ReadOptions) -> Result<Range> {
            range::prefix_in(self.handle(), prefix.as_ref(), opts.clone())
        }

        /// Flushes, then compacts every table overlapping `[start, end]` (`None`
        /// is unbounded) into the bottom of the tree, dropping overwritten
        /// versions and deletions no snapshot needs (chunked layout: a funk
        /// rebalance of every chunk in the range whose log holds anything).
        pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
            let (inner, tree) = match self.target() {
                Target::Tree(inner, tree) => (inner, tree),
                Target::Chunked(store, space) => return store.compact_range(space, start, end),
            };
            inner.check_writable("compact_range")?;
            tree.check_live()?;
            self.db().flush()?;
            crate::db::lsm::compact::compact_range(inner, tree, start, end)
        }

        /// The keyspace id this handle's writes carry; `KeyspaceNotFound`
        /// once the keyspace is dropped.
        fn keyspace_id(&self) -> Result<u32> {
            match self.target() {
                Target::Tree(_, tree) => {
                    tree.check_live()?;
                    Ok(tree.id)
                }
                Target::Chunked(_, space) => {
                    space.check_live()?;
                    Ok(space.id)
                }
            }
        }
    };
}
