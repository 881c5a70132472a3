//! Arguments of `thicket stress` and `thicket crashtest` (`--db`,
//! `--profile` and `--option` are the global arguments).

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct StressArgs {
    /// Worker threads.
    #[arg(long, value_name = "T", default_value_t = 4)]
    pub threads: usize,
    /// Seconds of random operations (0: only verify the store).
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub duration: f64,
    /// Seed of the operations and option choices (default: random).
    #[arg(long, value_name = "X")]
    pub seed: Option<u64>,
    /// SIGKILLs this process M milliseconds after the initial verification.
    #[arg(long, value_name = "M")]
    pub kill_after_ms: Option<u64>,
    /// Fraction of writes made with `sync`.
    #[arg(long, value_name = "F", default_value_t = 0.05)]
    pub sync_fraction: f64,
    /// Size of the key space when creating the expected state.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub keys: u32,
    /// Keyspaces the keys are spread over when creating the expected state
    /// (key i lives in keyspace i % N: the default one, then `stress-1`,
    /// ... with the next profiles' options), so batches span keyspaces.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub keyspaces: u32,
    /// The expected-state file (default: DIR.expected next to the store).
    #[arg(long, value_name = "PATH")]
    pub expected_state: Option<PathBuf>,
    /// Instead of the real file system, run N cycles in memory on a
    /// fault-injecting file system, each ending in a simulated power loss
    /// (or process crash) at a random moment; `--duration` is the total.
    #[arg(long, value_name = "N")]
    pub power_loss_cycles: Option<u32>,
    /// Fraction of operations that take a checkpoint (`Db::checkpoint`)
    /// into DIR.checkpoints/ while the others write, then open it and
    /// check it against the shadow as of that moment (not with
    /// `--power-loss-cycles`).
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    pub checkpoint_fraction: f64,
}

#[derive(Debug, Args)]
pub struct CrashtestArgs {
    /// Directory for the stores (one per profile; default: a fresh one under
    /// the temporary directory, removed after a clean run).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Seconds to run for.
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    pub duration: f64,
    /// Stop after this many SIGKILL cycles.
    #[arg(long, value_name = "N")]
    pub cycles: Option<u64>,
    /// Seed of the cycle choices (default: random).
    #[arg(long, value_name = "X")]
    pub seed: Option<u64>,
    /// Worker threads of each stress run.
    #[arg(long, value_name = "T", default_value_t = 4)]
    pub threads: usize,
    /// Longest time before a kill.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    pub max_kill_ms: u64,
    /// Fraction of cycles spent on in-memory power-loss runs instead.
    #[arg(long, value_name = "F", default_value_t = 0.2)]
    pub power_loss_fraction: f64,
    /// Simulated power losses per power-loss run.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub power_loss_cycles: u32,
    /// Key space of the stress runs.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub keys: u32,
    /// Keyspaces of the stress runs (`stress --keyspaces`).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub keyspaces: u32,
    /// On a failing run, set its store and log aside (under
    /// DIR/failed-N), go on with a fresh store, and fail at the end.
    #[arg(long)]
    pub keep_going: bool,
    /// Draw a combination of options for each store from what option
    /// validation accepts (the policy, every paper's technique, threads,
    /// caches; kept for the store's life, printed, and passed to each run
    /// as `--option`), redrawn when a failing store is set aside.
    #[arg(long)]
    pub random_options: bool,
    /// Fraction of each SIGKILL run's operations that take a checkpoint
    /// mid-run and verify it (`stress --checkpoint-fraction`).
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    pub checkpoint_fraction: f64,
    /// The `thicket` binary to run (default: this one).
    #[arg(long, value_name = "PATH")]
    pub thicket: Option<PathBuf>,
}
