//! `stats`: a readable summary or one JSON object, space amplification
//! included (it reads every live key).

use super::{open, Access, Status};
use crate::cli::GlobalArgs;
use crate::error::CliResult;
use crate::stats_json;

pub fn run(g: &GlobalArgs, json: bool) -> CliResult<Status> {
    let db = open(g, Access::ReadOnly)?;
    let space = db.space_usage()?;
    let stats = db.stats();
    db.close()?;
    if json {
        println!("{}", stats_json::to_json(&stats, &space));
    } else {
        print!("{}", stats_json::summary(&stats, &space));
    }
    Ok(Status::Success)
}
