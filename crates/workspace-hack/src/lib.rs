//! No code: this crate only unifies the features of shared dependencies
//! across the workspace's build commands (see its `Cargo.toml`).
