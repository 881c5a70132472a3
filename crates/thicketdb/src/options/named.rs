//! `named_values!`: `Display` and `FromStr` of an option's enum from its
//! variants' names, listed once (`layout.rs`, `policy_kind.rs`,
//! `durability.rs`).

/// Implements `Display` (the name) and `FromStr` (the name back; an
/// unknown one is `InvalidArgument` naming `$what` and the known names)
/// for the enum `$ty` with variants `$variant` named `$name`.
macro_rules! named_values {
    ($ty:ident, $what:literal, { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(match self {
                    $($ty::$variant => $name),+
                })
            }
        }

        impl std::str::FromStr for $ty {
            type Err = crate::error::Error;
            fn from_str(s: &str) -> crate::error::Result<$ty> {
                match s {
                    $($name => Ok($ty::$variant),)+
                    _ => Err(crate::error::Error::InvalidArgument(format!(
                        "unknown {} {s:?} (known: {})",
                        $what,
                        [$($name),+].join(", ")
                    ))),
                }
            }
        }
    };
}
