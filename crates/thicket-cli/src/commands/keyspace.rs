//! `keyspace create|list|drop`.

use thicketdb::{Layout, Profile};

use super::{apply_overrides, open, Access, Status};
use crate::cli::{GlobalArgs, KeyspaceCommand};
use crate::error::CliResult;

pub fn run(g: &GlobalArgs, command: &KeyspaceCommand) -> CliResult<Status> {
    match command {
        KeyspaceCommand::Create {
            name,
            keyspace_profile,
            keyspace_options,
        } => {
            let asked: Option<Profile> = keyspace_profile.as_deref().map(str::parse).transpose()?;
            let db = open(g, Access::Create)?;
            // Absent, the store's layout decides: `yodb` in a chunked store.
            let profile = match asked {
                Some(profile) => profile,
                None if db.options().layout == Layout::Chunked => Profile::YoDb,
                None => Profile::default(),
            };
            let mut options = profile.options();
            apply_overrides(&mut options, keyspace_options)?;
            db.create_keyspace(name, options)?;
            db.close()?;
            println!("created keyspace {name}");
        }
        KeyspaceCommand::List => {
            let db = open(g, Access::ReadOnly)?;
            let names = db.list_keyspaces();
            db.close()?;
            for name in names {
                println!("{name}");
            }
        }
        KeyspaceCommand::Drop { name } => {
            let db = open(g, Access::Existing)?;
            db.drop_keyspace(name)?;
            db.close()?;
            println!("dropped keyspace {name}");
        }
    }
    Ok(Status::Success)
}
