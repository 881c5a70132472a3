//! Keys as Redis sees them, on top of `Txn`'s spaces: a key is a plain
//! string in the database's keyspace, or metadata (a string with an
//! expiry, or a collection) in its companion, never both (a write to one
//! removes the other). Expired keys read as absent; the active expiry pass
//! (`expiry`) deletes them later.

use crate::meta::{
    member_prefix, new_version, prefix_end, Body, Collection, Kind, Meta, LIST_MIDDLE,
};
use crate::resp::Reply;
use crate::store::{Pairs, Space, Txn};

pub fn wrongtype() -> Reply {
    Reply::error("WRONGTYPE Operation against a key holding the wrong kind of value")
}

fn unreadable() -> Reply {
    Reply::error("ERR thicket: a key's metadata has an unknown format (written by a newer server?)")
}

impl Txn<'_> {
    /// The key's metadata as stored (expired or not); `None` when absent.
    pub fn stored(&mut self, key: &[u8]) -> Result<Option<Meta>, Reply> {
        if let Some(value) = self.get(Space::Main, key)? {
            return Ok(Some(Meta {
                expire_at: 0,
                body: Body::String(value),
            }));
        }
        match self.get(Space::Meta, key)? {
            Some(bytes) => Meta::decode(&bytes).map(Some).ok_or_else(unreadable),
            None => Ok(None),
        }
    }

    /// The key, unless absent or expired.
    pub fn lookup(&mut self, key: &[u8]) -> Result<Option<Meta>, Reply> {
        let now = self.now;
        Ok(self.stored(key)?.filter(|m| !m.expired(now)))
    }

    /// The key when it holds `kind`; WRONGTYPE when it holds another.
    pub fn lookup_as(&mut self, key: &[u8], kind: Kind) -> Result<Option<Meta>, Reply> {
        match self.lookup(key)? {
            Some(meta) if meta.kind() != kind => Err(wrongtype()),
            found => Ok(found),
        }
    }

    /// A string's value (WRONGTYPE for a collection).
    pub fn get_string(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, Reply> {
        Ok(self
            .lookup_as(key, Kind::String)?
            .and_then(|meta| match meta.body {
                Body::String(value) => Some(value),
                Body::Collection(..) => None,
            }))
    }

    /// Stores `meta` for `key`: a plain string in the database's keyspace,
    /// anything else in the companion; removes the key's other copy and,
    /// when a collection is replaced, its members.
    pub fn put_meta(&mut self, key: &[u8], meta: &Meta) -> Result<(), Reply> {
        let old = self.get(Space::Meta, key)?.and_then(|b| Meta::decode(&b));
        if let Some(Meta {
            body: Body::Collection(_, old),
            ..
        }) = &old
        {
            let replaced = match &meta.body {
                Body::Collection(_, new) => new.version != old.version,
                Body::String(_) => true,
            };
            if replaced && old.size > 0 {
                self.drop_members(key, old.version)?;
            }
        }
        match &meta.body {
            Body::String(value) if meta.expire_at == 0 => {
                self.put(Space::Main, key, value)?;
                if old.is_some() {
                    self.delete(Space::Meta, key)?;
                }
            }
            _ => {
                self.put(Space::Meta, key, &meta.encode())?;
                if self.get(Space::Main, key)?.is_some() {
                    self.delete(Space::Main, key)?;
                }
            }
        }
        Ok(())
    }

    /// Sets a string value with an expiry (0: none).
    pub fn set_string(&mut self, key: &[u8], value: &[u8], expire_at: u64) -> Result<(), Reply> {
        self.put_meta(
            key,
            &Meta {
                expire_at,
                body: Body::String(value.to_vec()),
            },
        )
    }

    /// Removes the key (expired or not) and a collection's members; one
    /// write whatever the collection's size. Returns whether it was there.
    pub fn delete_key(&mut self, key: &[u8]) -> Result<bool, Reply> {
        let mut found = false;
        if self.get(Space::Main, key)?.is_some() {
            self.delete(Space::Main, key)?;
            found = true;
        }
        if let Some(bytes) = self.get(Space::Meta, key)? {
            if let Some(Meta {
                body: Body::Collection(_, c),
                ..
            }) = Meta::decode(&bytes)
            {
                if c.size > 0 {
                    self.drop_members(key, c.version)?;
                }
            }
            self.delete(Space::Meta, key)?;
            found = true;
        }
        Ok(found)
    }

    /// One range tombstone over a collection version's members.
    fn drop_members(&mut self, key: &[u8], version: u64) -> Result<(), Reply> {
        let prefix = member_prefix(key, version);
        let end = prefix_end(&prefix);
        self.delete_range(Space::Members, &prefix, end.as_deref())
    }

    /// The collection at `key` when it is one of `kind` (WRONGTYPE else).
    pub fn collection(
        &mut self,
        key: &[u8],
        kind: Kind,
    ) -> Result<Option<(u64, Collection)>, Reply> {
        Ok(match self.lookup_as(key, kind)? {
            Some(Meta {
                expire_at,
                body: Body::Collection(_, c),
            }) => Some((expire_at, c)),
            _ => None,
        })
    }

    /// The collection at `key`, or a new empty one (not stored until
    /// `save_collection`).
    pub fn collection_or_new(
        &mut self,
        key: &[u8],
        kind: Kind,
    ) -> Result<(u64, Collection), Reply> {
        Ok(self.collection(key, kind)?.unwrap_or_else(|| {
            (
                0,
                Collection {
                    version: new_version(),
                    size: 0,
                    head: LIST_MIDDLE,
                    tail: LIST_MIDDLE,
                },
            )
        }))
    }

    /// Stores a collection's metadata after its members changed; an empty
    /// collection is deleted, as Redis deletes empty collections.
    pub fn save_collection(
        &mut self,
        key: &[u8],
        kind: Kind,
        expire_at: u64,
        c: Collection,
    ) -> Result<(), Reply> {
        if c.size == 0 {
            // Its members are gone one by one already.
            if self.get(Space::Meta, key)?.is_some() {
                self.delete(Space::Meta, key)?;
            }
            if self.get(Space::Main, key)?.is_some() {
                self.delete(Space::Main, key)?;
            }
            return Ok(());
        }
        self.put_meta(
            key,
            &Meta {
                expire_at,
                body: Body::Collection(kind, c),
            },
        )
    }

    fn member_key(key: &[u8], c: &Collection, member: &[u8]) -> Vec<u8> {
        let mut out = member_prefix(key, c.version);
        out.extend_from_slice(member);
        out
    }

    pub fn member(
        &mut self,
        key: &[u8],
        c: &Collection,
        member: &[u8],
    ) -> Result<Option<Vec<u8>>, Reply> {
        self.get(Space::Members, &Self::member_key(key, c, member))
    }

    pub fn put_member(
        &mut self,
        key: &[u8],
        c: &Collection,
        member: &[u8],
        value: &[u8],
    ) -> Result<(), Reply> {
        self.put(Space::Members, &Self::member_key(key, c, member), value)
    }

    pub fn delete_member(
        &mut self,
        key: &[u8],
        c: &Collection,
        member: &[u8],
    ) -> Result<(), Reply> {
        self.delete(Space::Members, &Self::member_key(key, c, member))
    }

    /// The members whose member part starts with `sub` (all: empty), in
    /// order, with the member part only.
    pub fn members(&mut self, key: &[u8], c: &Collection, sub: &[u8]) -> Result<Pairs, Reply> {
        let prefix = Self::member_key(key, c, sub);
        let start_len = prefix.len() - sub.len();
        // A member prefix never is all 0xff: it holds the key's length.
        let end = prefix_end(&prefix).unwrap_or_default();
        let mut found = self.range(Space::Members, &prefix, &end)?;
        for (member, _) in &mut found {
            member.drain(..start_len);
        }
        Ok(found)
    }

    /// Members with member parts in `[from, to)`.
    pub fn members_between(
        &mut self,
        key: &[u8],
        c: &Collection,
        from: &[u8],
        to: &[u8],
    ) -> Result<Pairs, Reply> {
        let start = Self::member_key(key, c, from);
        let end = Self::member_key(key, c, to);
        let start_len = start.len() - from.len();
        let mut found = self.range(Space::Members, &start, &end)?;
        for (member, _) in &mut found {
            member.drain(..start_len);
        }
        Ok(found)
    }

    /// Deletes the members with member parts in `[from, to)` with one range
    /// tombstone (LTRIM, ZREMRANGEBY...).
    pub fn delete_members_between(
        &mut self,
        key: &[u8],
        c: &Collection,
        from: &[u8],
        to: &[u8],
    ) -> Result<(), Reply> {
        let start = Self::member_key(key, c, from);
        let end = Self::member_key(key, c, to);
        self.delete_range(Space::Members, &start, Some(&end))
    }
}
