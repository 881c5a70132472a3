//! The commands, and how they open the store.

mod check;
mod dump;
mod keyspace;
mod kv;
mod load;
mod maintenance;
mod scan;
mod stats;

use std::path::Path;

use thicketdb::{Db, Keyspace, Options, Profile, DEFAULT_KEYSPACE_NAME};

use crate::cli::{Cli, Command, GlobalArgs, KeyspaceArg};
use crate::error::{CliError, CliResult};

/// How a command ended when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Success,
    /// `get` found no value (exit status 1).
    NotFound,
}

pub fn run(cli: Cli) -> CliResult<Status> {
    let g = &cli.global;
    match cli.command {
        Command::Put {
            key,
            value,
            sync,
            keyspace,
        } => kv::put(g, &keyspace, key.as_bytes(), value.as_bytes(), sync),
        Command::Get { key, keyspace } => kv::get(g, &keyspace, key.as_bytes()),
        Command::Delete {
            key,
            sync,
            keyspace,
        } => kv::delete(g, &keyspace, key.as_bytes(), sync),
        Command::DeleteRange {
            from,
            to,
            sync,
            keyspace,
        } => kv::delete_range(g, &keyspace, from.as_bytes(), to.as_bytes(), sync),
        Command::Scan(args) => scan::run(g, &args),
        Command::Stats { json } => stats::run(g, json),
        Command::Check => check::run(g),
        Command::Dump(args) => dump::run(g, &args),
        Command::Load(args) => load::run(g, &args),
        Command::Flush => maintenance::flush(g),
        Command::Compact { keyspace } => maintenance::compact(g, &keyspace),
        Command::Keyspace(command) => keyspace::run(g, &command),
        Command::Checkpoint { to } => maintenance::checkpoint(g, &to),
        Command::Bench(args) => crate::bench::run(g, *args).map(|()| Status::Success),
        Command::Stress(args) => crate::stress::run(g, &args),
        Command::Crashtest(args) => crate::stress::crashtest(g, &args),
        Command::Serve(args) => {
            let db = open(g, Access::Create)?;
            thicket_server::run(db, &args).map_err(|e| CliError::Io(std::io::Error::other(e)))?;
            Ok(Status::Success)
        }
    }
}

/// Whether a command may create a store that does not exist yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Writes: create the store when missing.
    Create,
    /// Maintenance: a missing store is an error, not an empty new store.
    Existing,
    /// Reads: like `Existing`, opened with `Db::open_read_only`, so nothing
    /// in the directory changes (a store on a full disk stays readable).
    ReadOnly,
}

/// The `--db` directory (required by every command).
pub fn db_dir(g: &GlobalArgs) -> CliResult<&Path> {
    g.db.as_deref()
        .ok_or_else(|| CliError::Usage("--db DIR is required".to_string()))
}

/// The options to open the store with: the stored ones when the store has
/// an OPTIONS file (else the requested profile's), then the requested
/// profile (so the library refuses a mismatch), then the `--option`
/// overrides in order.
pub fn build_options(g: &GlobalArgs, dir: &Path, access: Access) -> CliResult<Options> {
    let profile: Option<Profile> = g.profile.as_deref().map(str::parse).transpose()?;
    let mut options = match Options::load(dir)? {
        Some(mut stored) => {
            if let Some(p) = profile {
                stored.profile = p;
            }
            stored
        }
        None => profile.unwrap_or_default().options(),
    };
    if access != Access::Create {
        options.create_if_missing = false;
    }
    apply_overrides(&mut options, &g.options)?;
    Ok(options)
}

/// Applies `--option NAME=VALUE` overrides in order, then validates.
pub fn apply_overrides(options: &mut Options, specs: &[String]) -> CliResult<()> {
    for spec in specs {
        let (name, value) = spec.split_once('=').ok_or_else(|| {
            CliError::Usage(format!("bad --option {spec:?}: expected NAME=VALUE"))
        })?;
        options.set(name.trim(), value.trim())?;
    }
    options.validate()?;
    Ok(())
}

/// Opens the store named by `--db`.
pub fn open(g: &GlobalArgs, access: Access) -> CliResult<Db> {
    let dir = db_dir(g)?;
    let options = build_options(g, dir, access)?;
    if access != Access::Create && !options.create_if_missing && !Db::exists(dir) {
        return Err(CliError::Usage(format!("no store in {}", dir.display())));
    }
    Ok(match access {
        Access::ReadOnly => Db::open_read_only(dir, options)?,
        Access::Create | Access::Existing => Db::open(dir, options)?,
    })
}

/// Opens the store named by `--db` and the keyspace `--keyspace` names
/// (the default one when absent).
pub fn open_keyspace(
    g: &GlobalArgs,
    ks: &KeyspaceArg,
    access: Access,
) -> CliResult<(Db, Keyspace)> {
    let db = open(g, access)?;
    let name = ks.keyspace.as_deref().unwrap_or(DEFAULT_KEYSPACE_NAME);
    let keyspace = db.keyspace(name)?;
    Ok((db, keyspace))
}
