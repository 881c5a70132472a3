//! The order of user keys: bytewise (the built-in fast path) or a user's
//! comparator, and the internal-key order derived from it.
//!
//! Every comparison of keys in the engine goes through a [`KeyOrder`]:
//! memtables, table indexes and blocks, merging iterators, the key ranges
//! of tables in a version and the overlap tests of compactions. A store
//! records the comparator's name when it is created and refuses to open
//! with another (docs/format.md, `OPTIONS`).

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use super::bytes_order::compare_bytes;
use super::internal_key::{trailer, user_key};

/// A total order on user keys, as LevelDB's `Comparator`.
///
/// It must call two keys equal only when their bytes are equal (RocksDB's
/// `CanKeysWithDifferentByteContentsBeEqual() == false`): versions of a key
/// are grouped by their bytes. The order must never change for a store's
/// lifetime: the store records [`name`] and refuses to open with a
/// comparator of another name.
///
/// [`name`]: Comparator::name
pub trait Comparator: Send + Sync {
    /// Identifies the order; recorded in the store when it is created.
    fn name(&self) -> &str;
    /// Orders two user keys.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;
}

/// Name recorded for the built-in order (LevelDB's, so that a LevelDB
/// program that sets no comparator sees the same name).
pub const BYTEWISE_NAME: &str = "leveldb.BytewiseComparator";

/// The order a store sorts its keys by.
#[derive(Clone, Default)]
pub enum KeyOrder {
    /// Lexicographic byte order, inlined: the default and the fast path.
    #[default]
    Bytewise,
    /// A user's comparator, called for every comparison.
    Custom(Arc<dyn Comparator>),
}

impl KeyOrder {
    /// A user's comparator as a key order.
    pub fn custom(comparator: Arc<dyn Comparator>) -> KeyOrder {
        KeyOrder::Custom(comparator)
    }

    /// The name a store records for this order.
    pub fn name(&self) -> &str {
        match self {
            KeyOrder::Bytewise => BYTEWISE_NAME,
            KeyOrder::Custom(c) => c.name(),
        }
    }

    /// Whether this is the built-in byte order, which byte-level shortcuts
    /// (shortened index separators, prefix comparisons) rely on.
    #[inline]
    pub fn is_bytewise(&self) -> bool {
        matches!(self, KeyOrder::Bytewise)
    }

    /// Orders two user keys.
    #[inline]
    pub fn user(&self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            KeyOrder::Bytewise => compare_bytes(a, b),
            KeyOrder::Custom(c) => c.compare(a, b),
        }
    }

    /// Orders encoded internal keys: user key ascending, then trailer
    /// descending (newest version first).
    #[inline]
    pub fn internal(&self, a: &[u8], b: &[u8]) -> Ordering {
        self.user(user_key(a), user_key(b))
            .then_with(|| trailer(b).cmp(&trailer(a)))
    }

    /// Whether `a` sorts before `b`.
    #[inline]
    pub fn lt(&self, a: &[u8], b: &[u8]) -> bool {
        self.user(a, b) == Ordering::Less
    }

    /// Whether `a` sorts at or before `b`.
    #[inline]
    pub fn le(&self, a: &[u8], b: &[u8]) -> bool {
        self.user(a, b) != Ordering::Greater
    }

    /// The smaller of two user keys.
    pub fn min<'a>(&self, a: &'a [u8], b: &'a [u8]) -> &'a [u8] {
        if self.le(a, b) {
            a
        } else {
            b
        }
    }

    /// The larger of two user keys.
    pub fn max<'a>(&self, a: &'a [u8], b: &'a [u8]) -> &'a [u8] {
        if self.le(a, b) {
            b
        } else {
            a
        }
    }
}

impl fmt::Debug for KeyOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyOrder({})", self.name())
    }
}

/// Orders are equal when they have the same name: the name is the order's
/// identity, as the store records it.
impl PartialEq for KeyOrder {
    fn eq(&self, other: &KeyOrder) -> bool {
        self.name() == other.name()
    }
}

impl Eq for KeyOrder {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{InternalKey, ValueKind};

    struct Reverse;
    impl Comparator for Reverse {
        fn name(&self) -> &str {
            "test.Reverse"
        }
        fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
            b.cmp(a)
        }
    }

    #[test]
    fn internal_order_follows_the_user_order_then_newest_first() {
        let orders = [KeyOrder::Bytewise, KeyOrder::custom(Arc::new(Reverse))];
        for order in orders {
            let a5 = InternalKey::new(b"a", 5, ValueKind::Value);
            let a9 = InternalKey::new(b"a", 9, ValueKind::Value);
            let b1 = InternalKey::new(b"b", 1, ValueKind::Value);
            assert_eq!(order.internal(a9.encoded(), a5.encoded()), Ordering::Less);
            let user = order.user(b"a", b"b");
            assert_eq!(order.internal(a5.encoded(), b1.encoded()), user);
            assert_eq!(order.internal(a9.encoded(), b1.encoded()), user);
        }
        assert_eq!(KeyOrder::Bytewise.user(b"a", b"b"), Ordering::Less);
        assert_eq!(
            KeyOrder::custom(Arc::new(Reverse)).user(b"a", b"b"),
            Ordering::Greater
        );
    }

    #[test]
    fn orders_are_identified_by_name() {
        assert_eq!(KeyOrder::Bytewise.name(), BYTEWISE_NAME);
        assert_ne!(KeyOrder::Bytewise, KeyOrder::custom(Arc::new(Reverse)));
        assert_eq!(
            KeyOrder::custom(Arc::new(Reverse)),
            KeyOrder::custom(Arc::new(Reverse))
        );
    }
}
