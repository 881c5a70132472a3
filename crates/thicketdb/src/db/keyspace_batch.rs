//! A `WriteBatch`'s updates in a keyspace (`put_in`, `delete_in`,
//! `delete_range_in`): the facade's half of the batch, since they take the
//! `Keyspace` handle; the batch itself (`batch.rs`) knows keyspace ids only.

use super::batch::WriteBatch;
use super::keyspace::Keyspace;
use crate::error::Result;

impl WriteBatch {
    /// Adds a put in `keyspace`: the batch stays atomic across keyspaces
    /// (they share the log), also across a crash.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = thicketdb::Db::open(dir.path(), thicketdb::Options::default())?;
    /// let users = db.create_keyspace("users", thicketdb::Options::default())?;
    /// let mut batch = thicketdb::WriteBatch::new();
    /// batch.put("user-count", "1")?;
    /// batch.put_in(&users, "alice", "admin")?;
    /// db.write(batch)?;
    /// assert_eq!(users.get("alice")?, Some(b"admin".to_vec()));
    /// assert_eq!(db.get("alice")?, None);
    /// # Ok::<(), thicketdb::Error>(())
    /// ```
    pub fn put_in(
        &mut self,
        keyspace: &Keyspace,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.bind(keyspace.store())?;
        self.put_to(keyspace.id(), key.as_ref(), value.as_ref())
    }

    /// Adds a delete in `keyspace`.
    pub fn delete_in(&mut self, keyspace: &Keyspace, key: impl AsRef<[u8]>) -> Result<()> {
        self.bind(keyspace.store())?;
        self.delete_to(keyspace.id(), key.as_ref())
    }

    /// Adds a range deletion of `[start, end)` in `keyspace`.
    pub fn delete_range_in(
        &mut self,
        keyspace: &Keyspace,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.bind(keyspace.store())?;
        self.delete_range_to(keyspace.id(), start.as_ref(), end.as_ref())
    }
}
