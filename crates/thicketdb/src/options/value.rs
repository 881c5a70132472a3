//! How an option's value is read from and written as text (`--option
//! NAME=VALUE`, the `OPTIONS` file).

use std::sync::Arc;

use super::{Durability, Layout, PolicyKind};
use crate::error::{Error, Result};
use crate::format::key_order::{KeyOrder, BYTEWISE_NAME};
use crate::log::RecoveryMode;
use crate::table::{BlockCache, CompressionType, FilterPolicy};

/// A type an option can have.
pub(crate) trait OptionValue: Sized {
    /// Parses `value`; `name` is the option, for the error.
    fn parse_option(name: &str, value: &str) -> Result<Self>;
    /// The textual form `parse_option` reads back.
    fn show(&self) -> String;
}

macro_rules! from_str_values {
    ($($ty:ty),*) => {$(
        impl OptionValue for $ty {
            fn parse_option(name: &str, value: &str) -> Result<Self> {
                value.parse().map_err(|_| {
                    Error::InvalidArgument(format!("bad value {value:?} for option {name}"))
                })
            }
            fn show(&self) -> String {
                self.to_string()
            }
        }
    )*};
}

from_str_values!(
    u32,
    u64,
    usize,
    f64,
    CompressionType,
    RecoveryMode,
    PolicyKind,
    Layout,
    Durability
);

impl OptionValue for bool {
    fn parse_option(name: &str, value: &str) -> Result<bool> {
        match value {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(Error::InvalidArgument(format!(
                "bad value {value:?} for option {name} (expected true or false)"
            ))),
        }
    }
    fn show(&self) -> String {
        self.to_string()
    }
}

/// Options holding objects (a filter policy, a shared cache) are set
/// through the API only: they have no textual form.
macro_rules! api_only_values {
    ($($ty:ty),*) => {$(
        impl OptionValue for $ty {
            fn parse_option(name: &str, _value: &str) -> Result<Self> {
                Err(Error::InvalidArgument(format!(
                    "option {name} is set through the API, not by name"
                )))
            }
            fn show(&self) -> String {
                format!("{self:?}")
            }
        }
    )*};
}

api_only_values!(Option<Arc<dyn FilterPolicy>>, Option<BlockCache>);
/// Only the built-in order has a textual form: a custom comparator is code.
impl OptionValue for KeyOrder {
    fn parse_option(name: &str, value: &str) -> Result<KeyOrder> {
        match value {
            BYTEWISE_NAME | "bytewise" => Ok(KeyOrder::Bytewise),
            _ => Err(Error::InvalidArgument(format!(
                "option {name}: only {BYTEWISE_NAME:?} can be named; \
                 a custom comparator is given in code (KeyOrder::custom)"
            ))),
        }
    }
    fn show(&self) -> String {
        self.name().to_string()
    }
}
