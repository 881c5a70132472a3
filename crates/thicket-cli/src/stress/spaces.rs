//! The stress test's keyspaces: key `i` lives in keyspace `i % n` (the
//! default keyspace and `stress-1` .. `stress-{n-1}`), so a batch of
//! several keys is a batch across keyspaces, and the expected state of a
//! key is that of its keyspace. Each extra keyspace runs another profile's
//! options than the store (the next profiles of the store's layout in
//! `Profile::ALL`; `yodb` again in a chunked store), with tunables picked
//! as for the store.

use rand::rngs::StdRng;
use thicketdb::{Db, Keyspace, Options, Profile, DEFAULT_KEYSPACE_NAME};

use super::pick_tunables;
use crate::commands::apply_overrides;
use crate::error::CliResult;

/// Handles on the keyspaces, by number.
pub struct Spaces {
    handles: Vec<Keyspace>,
}

impl Spaces {
    /// Opens the `n` keyspaces of the store, creating the missing ones.
    pub fn open(db: &Db, n: u32, user: &[String], rng: &mut StdRng) -> CliResult<Spaces> {
        let n = n.max(1);
        let mut handles = Vec::with_capacity(n as usize);
        for j in 0..n {
            let name = name(j);
            let handle = match db.keyspace(&name) {
                Ok(handle) => handle,
                Err(_) => {
                    let (options, chosen) = keyspace_options(db.options(), j, user, rng)?;
                    println!(
                        "stress: keyspace {name}: profile {} options {}",
                        options.profile,
                        chosen.join(" ")
                    );
                    db.create_keyspace(&name, options)?
                }
            };
            handles.push(handle);
        }
        Ok(Spaces { handles })
    }

    pub fn count(&self) -> u32 {
        self.handles.len() as u32
    }

    /// The keyspace key `i` lives in.
    pub fn of(&self, i: u32) -> &Keyspace {
        &self.handles[(i % self.count()) as usize]
    }

    /// Keyspace number `c`.
    pub fn get(&self, c: u32) -> &Keyspace {
        &self.handles[c as usize]
    }

    /// Whether key `i` lives in keyspace number `c`.
    pub fn holds(&self, c: u32, i: u32) -> bool {
        i % self.count() == c
    }
}

fn name(j: u32) -> String {
    match j {
        0 => DEFAULT_KEYSPACE_NAME.to_string(),
        j => format!("stress-{j}"),
    }
}

/// Options of keyspace number `j`: the profile `j` places after the
/// store's in `Profile::ALL`, the tunables (returned as `NAME=VALUE`),
/// then the user's `--option`s.
fn keyspace_options(
    store: &Options,
    j: u32,
    user: &[String],
    rng: &mut StdRng,
) -> CliResult<(Options, Vec<String>)> {
    // The profiles of the store's layout: the layout is per store.
    let same_layout: Vec<Profile> = Profile::ALL
        .iter()
        .copied()
        .filter(|p| p.options().layout == store.layout)
        .collect();
    let at = same_layout
        .iter()
        .position(|&p| p == store.profile)
        .unwrap_or(0);
    let profile = same_layout[(at + j as usize) % same_layout.len()];
    let mut options = profile.options();
    let chosen = pick_tunables(&mut options, user, rng, super::TUNABLES);
    apply_overrides(&mut options, user)?;
    Ok((options, chosen))
}
