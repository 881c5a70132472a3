//! Redis's encoding-tuning parameters (`hash-max-listpack-entries`...).
//! Encodings here are fixed, so `CONFIG SET` accepts them and changes
//! nothing but what `CONFIG GET` reports; clients and tools that tune
//! them (Redis's own test suite does) keep working.

use std::collections::BTreeMap;

use parking_lot::Mutex;

/// The parameters with Redis 7.0's defaults.
const DEFAULTS: &[(&str, &str)] = &[
    ("hash-max-listpack-entries", "128"),
    ("hash-max-listpack-value", "64"),
    ("hash-max-ziplist-entries", "128"),
    ("hash-max-ziplist-value", "64"),
    ("set-max-intset-entries", "512"),
    ("zset-max-listpack-entries", "128"),
    ("zset-max-listpack-value", "64"),
    ("zset-max-ziplist-entries", "128"),
    ("zset-max-ziplist-value", "64"),
    ("list-max-listpack-size", "-2"),
    ("list-max-ziplist-size", "-2"),
    ("list-compress-depth", "0"),
];

pub struct Tunables {
    values: Mutex<BTreeMap<&'static str, String>>,
}

impl Tunables {
    pub fn new() -> Tunables {
        Tunables {
            values: Mutex::new(
                DEFAULTS
                    .iter()
                    .map(|(name, value)| (*name, value.to_string()))
                    .collect(),
            ),
        }
    }

    /// Every parameter with its current value.
    pub fn all(&self) -> Vec<(&'static str, String)> {
        self.values
            .lock()
            .iter()
            .map(|(name, value)| (*name, value.clone()))
            .collect()
    }

    /// A parameter's value (0 for an unknown name).
    pub fn get(&self, name: &str) -> i64 {
        self.values
            .lock()
            .get(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// Whether `name` is one of them.
    pub fn knows(&self, name: &str) -> bool {
        self.values.lock().contains_key(name)
    }

    /// Every value must be an integer, as Redis requires.
    pub fn check(name: &str, value: &str) -> Result<(), String> {
        match value.parse::<i64>() {
            Ok(_) => Ok(()),
            Err(_) => Err(format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - argument couldn't be parsed into an integer"
            )),
        }
    }

    /// Sets a known parameter (checked with `check`), and its alias: the
    /// `*-ziplist-*` names are the `*-listpack-*` ones, as in Redis 7.
    pub fn set(&self, name: &str, value: String) {
        let alias = if name.contains("ziplist") {
            name.replace("ziplist", "listpack")
        } else {
            name.replace("listpack", "ziplist")
        };
        let mut values = self.values.lock();
        for name in [name, alias.as_str()] {
            if let Some(slot) = values.get_mut(name) {
                *slot = value.clone();
            }
        }
    }
}
