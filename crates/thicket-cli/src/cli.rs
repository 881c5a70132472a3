//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "thicket",
    version,
    about = "Command-line tool of the ThicketDB key-value store"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Arguments every command accepts, before or after the command name.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Directory of the store.
    #[arg(long, global = true, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Overrides one option for this open (repeatable).
    #[arg(long = "option", global = true, value_name = "NAME=VALUE")]
    pub options: Vec<String>,
    /// Options profile; used when creating the store, checked against the
    /// stored one afterwards.
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Sets KEY to VALUE.
    Put {
        key: String,
        value: String,
        /// fdatasync the log before returning.
        #[arg(long)]
        sync: bool,
        #[command(flatten)]
        keyspace: KeyspaceArg,
    },
    /// Prints the value of KEY; exit status 1 when absent.
    Get {
        key: String,
        #[command(flatten)]
        keyspace: KeyspaceArg,
    },
    /// Removes KEY.
    Delete {
        key: String,
        /// fdatasync the log before returning.
        #[arg(long)]
        sync: bool,
        #[command(flatten)]
        keyspace: KeyspaceArg,
    },
    /// Removes every key in [FROM, TO) with one range tombstone.
    DeleteRange {
        from: String,
        to: String,
        /// fdatasync the log before returning.
        #[arg(long)]
        sync: bool,
        #[command(flatten)]
        keyspace: KeyspaceArg,
    },
    /// Prints `key<TAB>value` lines in key order.
    Scan(ScanArgs),
    /// Prints engine statistics.
    Stats {
        /// One JSON object instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Verifies every checksum of the store's live files.
    Check,
    /// Decodes the MANIFEST (the default: every edit and the version it
    /// leaves), one live table or one log; reads only.
    Dump(DumpArgs),
    /// Writes generated keys `key%016d`, reporting `acked N` progress.
    Load(LoadArgs),
    /// Flushes the memtables (of every keyspace) to tables.
    Flush,
    /// Compacts the whole key range into the bottom of the tree.
    Compact {
        #[command(flatten)]
        keyspace: KeyspaceArg,
    },
    /// Creates, lists or drops keyspaces (independent namespaces of the
    /// store, sharing its log).
    #[command(subcommand)]
    Keyspace(KeyspaceCommand),
    /// Writes a consistent, openable copy of the store into the new
    /// directory DIR2 (segments hard-linked where possible).
    Checkpoint {
        /// The new directory (must not exist).
        #[arg(long, value_name = "DIR2")]
        to: PathBuf,
    },
    /// Benchmarks ThicketDB and its peers (see docs/benchmarks.md).
    Bench(Box<crate::bench::BenchArgs>),
    /// Random concurrent operations checked against an expected state kept
    /// beside the store (DIR.expected); verifies the store against it first.
    Stress(crate::stress::StressArgs),
    /// Runs `stress` repeatedly, SIGKILLing it at random moments, for every
    /// profile, plus in-memory power-loss runs.
    Crashtest(crate::stress::CrashtestArgs),
    /// Serves the store over the Redis protocol (see docs/server.md).
    Serve(thicket_server::ServeArgs),
}

/// The keyspace a data command works on.
#[derive(Debug, Args, Default)]
pub struct KeyspaceArg {
    /// The keyspace (the default keyspace when absent); it must exist
    /// (`thicket keyspace create`).
    #[arg(long, value_name = "NAME")]
    pub keyspace: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum KeyspaceCommand {
    /// Creates keyspace NAME with its own options: the profile's, then the
    /// `--keyspace-option` overrides (store-wide options stay the store's).
    Create {
        name: String,
        /// The profile the keyspace's options start from (default:
        /// `default`, or `yodb` in a chunked store).
        #[arg(long, value_name = "NAME")]
        keyspace_profile: Option<String>,
        /// Overrides one of the keyspace's options (repeatable).
        #[arg(long = "keyspace-option", value_name = "NAME=VALUE")]
        keyspace_options: Vec<String>,
    },
    /// Prints every keyspace's name, one per line, the default one first.
    List,
    /// Drops keyspace NAME and all its data.
    Drop { name: String },
}

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Inclusive lower bound.
    #[arg(long, value_name = "KEY")]
    pub from: Option<String>,
    /// Exclusive upper bound.
    #[arg(long, value_name = "KEY")]
    pub to: Option<String>,
    /// Prints at most N entries.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Scans from the top down.
    #[arg(long)]
    pub reverse: bool,
    #[command(flatten)]
    pub keyspace: KeyspaceArg,
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// The MANIFEST: every edit and the version it leaves (the default).
    #[arg(long, conflicts_with_all = ["table", "log"])]
    pub manifest: bool,
    /// One live table: its properties, index and entries (the MANIFEST
    /// dump lists each table's segment and offset).
    #[arg(long, value_name = "SEGMENT:OFFSET", conflicts_with = "log")]
    pub table: Option<String>,
    /// One log, by file number: its records and their operations.
    #[arg(long, value_name = "N")]
    pub log: Option<u64>,
    /// One JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Number of keys to write.
    #[arg(long, value_name = "N")]
    pub count: u64,
    /// Index of the first key.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub start: u64,
    /// Bytes per value.
    #[arg(long, value_name = "B", default_value_t = 100)]
    pub value_size: usize,
    /// fdatasync every write.
    #[arg(long)]
    pub sync: bool,
    /// Writes the keys in a seeded random order.
    #[arg(long)]
    pub random: bool,
    /// Seed of the random order.
    #[arg(long, value_name = "X", default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub keyspace: KeyspaceArg,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_args_go_anywhere() {
        let cli = Cli::try_parse_from([
            "thicket", "--db", "d", "put", "k", "v", "--option", "a=1", "--option", "b=2",
        ])
        .unwrap();
        assert_eq!(cli.global.db, Some(PathBuf::from("d")));
        assert_eq!(cli.global.options, ["a=1", "b=2"]);
        let cli = Cli::try_parse_from(["thicket", "get", "k", "--db", "d"]).unwrap();
        assert_eq!(cli.global.db, Some(PathBuf::from("d")));
    }

    #[test]
    fn the_keyspace_flag_parses() {
        let cli = Cli::try_parse_from(["thicket", "put", "k", "v", "--keyspace", "users"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Put { keyspace: KeyspaceArg { keyspace: Some(ref k) }, .. } if k == "users"
        ));
    }
}
