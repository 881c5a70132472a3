//! Statistics structs whose fields are declared once: `stat_struct!`
//! declares the struct and a `fields()` list of `(name, StatValue)` built
//! from the same declaration, so that every consumer (the CLI's JSON, a
//! server's INFO section, a binding's dict) iterates one list instead of
//! repeating the field names.

/// The value of one statistic, as listed by `Stats::fields` and
/// `SpaceUsage::fields`.
#[derive(Debug, Clone, PartialEq)]
pub enum StatValue {
    /// A count or a byte figure.
    U64(u64),
    /// A count of things in memory.
    Usize(usize),
    /// A ratio or an average.
    F64(f64),
    /// A switch.
    Bool(bool),
    /// One value per level, L0 first.
    U64List(Vec<u64>),
    /// One value per level, L0 first.
    UsizeList(Vec<usize>),
    /// Text that may be absent (`None` when there is nothing to report).
    Text(Option<String>),
}

macro_rules! stat_value_from {
    ($($ty:ty => $variant:ident,)*) => {
        $(impl From<&$ty> for StatValue {
            fn from(value: &$ty) -> StatValue {
                StatValue::$variant(value.clone())
            }
        })*
    };
}

stat_value_from! {
    u64 => U64,
    usize => Usize,
    f64 => F64,
    bool => Bool,
    Vec<u64> => U64List,
    Vec<usize> => UsizeList,
    Option<String> => Text,
}

/// Declares a statistics struct and its `fields()` list. Every field needs
/// a doc comment (it is the statistic's documentation) and a type that
/// converts into a `StatValue`.
///
/// With a `counters,` marker among the fields and the counter lists of
/// `with_counters!` after the struct, the cumulative counters become `u64`
/// fields (the per-level ones `Vec<u64>`) at the marker, documented as in `Counters`, and
/// `copy_counters` fills them from a `Counters` (see `db::Stats`).
macro_rules! stat_struct {
    (@declare [$($meta:tt)*] $name:ident {
        $( $(#[doc = $doc:literal])+ pub $field:ident: $ty:ty, )*
    }) => {
        $($meta)*
        #[non_exhaustive]
        pub struct $name {
            $( $(#[doc = $doc])+ pub $field: $ty, )*
        }

        impl $name {
            /// Every field as `(name, value)`, in declaration order; the
            /// name is the field's name. For reports that list every
            /// statistic without naming each one.
            pub fn fields(&self) -> Vec<(&'static str, $crate::stats::StatValue)> {
                vec![$( (stringify!($field), $crate::stats::StatValue::from(&self.$field)), )*]
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[doc = $doc:literal])+ pub $field:ident: $ty:ty, )*
            counters,
            $( $(#[doc = $after_doc:literal])+ pub $after:ident: $after_ty:ty, )*
        }
        [ $( $counter:ident: $counter_doc:literal, )* ]
        [ $( $per:ident: $per_doc:literal, )* ]
    ) => {
        $crate::stats::stat_struct!(@declare [$(#[$meta])*] $name {
            $( $(#[doc = $doc])+ pub $field: $ty, )*
            $( #[doc = $counter_doc] pub $counter: u64, )*
            $( #[doc = $per_doc] pub $per: Vec<u64>, )*
            $( $(#[doc = $after_doc])+ pub $after: $after_ty, )*
        });

        impl $name {
            /// Copies every cumulative counter into the field of its name
            /// (the per-level ones as one value per level, L0 first).
            pub(crate) fn copy_counters(&mut self, counters: &$crate::stats::Counters) {
                $( self.$counter = $crate::stats::Counters::get(&counters.$counter); )*
                $( self.$per = counters.$per.iter().map($crate::stats::Counters::get).collect(); )*
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident { $($fields:tt)* }
    ) => {
        $crate::stats::stat_struct!(@declare [$(#[$meta])*] $name { $($fields)* });
    };
}
pub(crate) use stat_struct;

#[cfg(test)]
mod tests {
    use super::*;

    stat_struct! {
        /// A struct for the test.
        #[derive(Default)]
        pub struct Sample {
            /// A count.
            pub count: u64,
            /// Per level.
            pub per_level: Vec<usize>,
            /// Maybe text.
            pub note: Option<String>,
        }
    }

    #[test]
    fn fields_lists_every_field_in_declaration_order() {
        let sample = Sample {
            count: 7,
            per_level: vec![1, 2],
            note: Some("n".into()),
        };
        assert_eq!(
            sample.fields(),
            [
                ("count", StatValue::U64(7)),
                ("per_level", StatValue::UsizeList(vec![1, 2])),
                ("note", StatValue::Text(Some("n".into()))),
            ]
        );
        assert_eq!(Sample::default().fields()[2].1, StatValue::Text(None));
    }
}
