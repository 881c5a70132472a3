//! Connection and server commands: PING, ECHO, HELLO, SELECT, QUIT, INFO,
//! CONFIG, COMMAND, CLIENT, TIME, SHUTDOWN.

use std::fmt::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use super::numbers::parse_i64;
use super::thicket::stats_fields;
use super::{arity_error, CmdResult, Ctx, Handler, COMMANDS};
use crate::durability::FsyncPolicy;
use crate::glob::glob_match;
use crate::resp::{Protocol, Reply};
use crate::session::Close;
use crate::shared::Shared;
use crate::store::{index_keyspace_name, Database};
use crate::tunables::Tunables;

/// The Redis version clients are told (the command set is Redis 7.0's).
pub const REDIS_VERSION: &str = "7.0.0";

pub fn ping(_ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    match args {
        [_] => Ok(Reply::Simple("PONG")),
        [_, message] => Ok(Reply::Bulk(message.clone())),
        _ => Err(arity_error("ping")),
    }
}

pub fn echo(_ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Bulk(args[1].clone()))
}

pub fn hello(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let mut protocol = ctx.session.protocol;
    if let Some(version) = args.get(1) {
        protocol = match parse_i64(version) {
            Some(2) => Protocol::Resp2,
            Some(3) => Protocol::Resp3,
            Some(_) => return Err(Reply::error("NOPROTO unsupported protocol version")),
            None => {
                return Err(Reply::error(
                    "ERR Protocol version is not an integer or out of range",
                ))
            }
        };
    }
    let mut name = None;
    let mut i = 2;
    while i < args.len() {
        match args[i].to_ascii_uppercase().as_slice() {
            // No passwords: every user is the default one, as in a Redis
            // without `requirepass`.
            b"AUTH" if i + 2 < args.len() => i += 3,
            b"SETNAME" if i + 1 < args.len() => {
                name = Some(check_client_name(&args[i + 1])?);
                i += 2;
            }
            _ => {
                let option = String::from_utf8_lossy(&args[i]);
                return Err(Reply::error(format!(
                    "ERR Syntax error in HELLO option '{option}'"
                )));
            }
        }
    }
    ctx.session.protocol = protocol;
    if let Some(name) = name {
        ctx.session.name = Some(name);
    }
    let proto = match protocol {
        Protocol::Resp2 => 2,
        Protocol::Resp3 => 3,
    };
    Ok(Reply::Map(vec![
        (Reply::bulk("server"), Reply::bulk("redis")),
        (Reply::bulk("version"), Reply::bulk(REDIS_VERSION)),
        (Reply::bulk("proto"), Reply::Int(proto)),
        (Reply::bulk("id"), Reply::Int(ctx.session.id as i64)),
        (Reply::bulk("mode"), Reply::bulk("standalone")),
        (Reply::bulk("role"), Reply::bulk("master")),
        (Reply::bulk("modules"), Reply::Array(Vec::new())),
    ]))
}

/// SELECT index: database 0 is the store's default keyspace, database
/// `i` in `1..databases` the keyspace `db<i>` (created by its first write).
pub fn select(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let index = parse_i64(&args[1])
        .ok_or_else(|| Reply::error("ERR value is not an integer or out of range"))?;
    let index = u32::try_from(index)
        .ok()
        .filter(|&i| i < ctx.shared.databases)
        .ok_or_else(|| Reply::error("ERR DB index is out of range"))?;
    ctx.session.database = Database::Index(index);
    Ok(Reply::OK)
}

pub fn quit(ctx: &mut Ctx, _args: &[Vec<u8>]) -> CmdResult {
    ctx.session.close = Some(Close::AfterReply);
    Ok(Reply::OK)
}

pub fn time(_ctx: &mut Ctx, _args: &[Vec<u8>]) -> CmdResult {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Ok(Reply::Array(vec![
        Reply::bulk(now.as_secs().to_string()),
        Reply::bulk(now.subsec_micros().to_string()),
    ]))
}

pub fn shutdown(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    for option in &args[1..] {
        match option.to_ascii_uppercase().as_slice() {
            b"NOSAVE" | b"SAVE" | b"NOW" | b"FORCE" => {}
            b"ABORT" => return Err(Reply::error("ERR No shutdown in progress.")),
            _ => return Err(super::syntax_error()),
        }
    }
    ctx.shared.request_shutdown();
    ctx.session.close = Some(Close::WithoutReply);
    Ok(Reply::OK)
}

/// `/proc/self/statm`'s resident pages, in bytes (0 where unavailable).
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

pub fn info(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let requested: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_lowercase())
        .collect();
    let everything = requested.iter().any(|s| s == "all" || s == "everything");
    let wants = |section: &str| {
        everything
            || (requested.is_empty() || requested.iter().any(|s| s == "default"))
                && section != "keyspace"
            || requested.iter().any(|s| s == section)
    };
    let shared = ctx.shared;
    let mut out = String::new();
    let mut section = |name: &str, fields: Vec<(&str, String)>| {
        if wants(&name.to_lowercase()) {
            if !out.is_empty() {
                out.push_str("\r\n");
            }
            let _ = write!(out, "# {name}\r\n");
            for (field, value) in fields {
                let _ = write!(out, "{field}:{value}\r\n");
            }
        }
    };
    section(
        "Server",
        vec![
            ("redis_version", REDIS_VERSION.to_string()),
            ("thicket_version", env!("CARGO_PKG_VERSION").to_string()),
            ("redis_mode", "standalone".into()),
            ("os", std::env::consts::OS.into()),
            ("arch_bits", (usize::BITS).to_string()),
            ("process_id", std::process::id().to_string()),
            ("tcp_port", shared.listen.port().to_string()),
            (
                "uptime_in_seconds",
                shared.started.elapsed().as_secs().to_string(),
            ),
        ],
    );
    section(
        "Clients",
        vec![
            ("connected_clients", shared.metrics.connected().to_string()),
            ("maxclients", shared.limits.max_clients.to_string()),
        ],
    );
    let rss = resident_bytes();
    section(
        "Memory",
        vec![
            ("used_memory", rss.to_string()),
            ("used_memory_rss", rss.to_string()),
        ],
    );
    let sync = shared.durability.counters();
    section(
        "Persistence",
        vec![
            ("loading", "0".into()),
            ("aof_enabled", "1".into()),
            ("appendfsync", shared.durability.policy().name().into()),
            ("sync_rounds", sync.rounds.to_string()),
            ("sync_waiters", sync.waiters.to_string()),
        ],
    );
    let load =
        |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed).to_string();
    section(
        "Stats",
        vec![
            (
                "total_connections_received",
                load(&shared.metrics.connections_accepted),
            ),
            (
                "total_commands_processed",
                shared.metrics.total_calls().to_string(),
            ),
            (
                "rejected_connections",
                load(&shared.metrics.connections_rejected),
            ),
            ("expired_keys", load(&shared.metrics.expired_keys)),
            ("evicted_keys", "0".into()),
            ("pipeline_batches", load(&shared.metrics.pipeline_batches)),
            (
                "pipeline_batched_commands",
                load(&shared.metrics.pipeline_batched_commands),
            ),
            (
                "pipeline_batch_retries",
                load(&shared.metrics.pipeline_batch_retries),
            ),
        ],
    );
    section(
        "Replication",
        vec![("role", "master".into()), ("connected_slaves", "0".into())],
    );
    let mut keyspace = Vec::new();
    if wants("keyspace") {
        for index in numbered_databases(shared) {
            let (keys, expires) = crate::walk::count_keys(
                &shared.store,
                &Database::Index(index),
                crate::meta::now_ms(),
            )?;
            if keys > 0 {
                let value = format!("keys={keys},expires={expires},avg_ttl=0");
                keyspace.push((format!("db{index}"), value));
            }
        }
    }
    let keyspace = keyspace.iter().map(|(db, v)| (db.as_str(), v.clone()));
    section("Keyspace", keyspace.collect());
    let stats = shared.store.db().stats();
    section("Thicket", stats_fields(&stats));
    Ok(Reply::Verbatim(out))
}

/// The numbered databases that exist: 0, and each `i` in `1..databases`
/// whose keyspace `db<i>` has been created.
fn numbered_databases(shared: &Shared) -> Vec<u32> {
    let created = shared
        .store
        .db()
        .list_keyspaces()
        .into_iter()
        .filter_map(|name| {
            let index: u32 = name.strip_prefix("db")?.parse().ok()?;
            (index > 0 && index < shared.databases && index_keyspace_name(index) == name)
                .then_some(index)
        });
    let mut indexes: Vec<u32> = std::iter::once(0).chain(created).collect();
    indexes.sort_unstable();
    indexes
}

/// The parameters CONFIG GET reports (what clients and benchmarks ask).
fn config_parameters(ctx: &Ctx) -> Vec<(&'static str, String)> {
    let shared = ctx.shared;
    let limits = &shared.limits;
    vec![
        ("appendonly", "yes".into()),
        ("appendfsync", shared.durability.policy().name().into()),
        ("save", String::new()),
        ("databases", shared.databases.to_string()),
        ("maxmemory", "0".into()),
        ("maxmemory-policy", "noeviction".into()),
        ("maxclients", limits.max_clients.to_string()),
        ("proto-max-bulk-len", limits.max_bulk_len.to_string()),
        (
            "client-query-buffer-limit",
            limits.max_request_bytes.to_string(),
        ),
        ("port", shared.listen.port().to_string()),
        ("bind", shared.listen.ip().to_string()),
        ("timeout", "0".into()),
        ("tcp-keepalive", "0".into()),
        ("cluster-enabled", "no".into()),
        ("dir", shared.store.db().path().display().to_string()),
    ]
    .into_iter()
    .chain(shared.tunables.all())
    .collect()
}

pub fn config(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let sub = args[1].to_ascii_uppercase();
    match sub.as_slice() {
        b"GET" => {
            if args.len() < 3 {
                return Err(arity_error("config|get"));
            }
            let pairs = config_parameters(ctx)
                .into_iter()
                .filter(|(name, _)| {
                    args[2..]
                        .iter()
                        .any(|p| glob_match(&p.to_ascii_lowercase(), name.as_bytes()))
                })
                .map(|(name, value)| (Reply::bulk(name), Reply::bulk(value)))
                .collect();
            Ok(Reply::Map(pairs))
        }
        b"SET" => {
            if args.len() < 4 || args.len() % 2 == 1 {
                return Err(arity_error("config|set"));
            }
            let mut policies = Vec::new();
            let mut tuned = Vec::new();
            for pair in args[2..].chunks(2) {
                let name = String::from_utf8_lossy(&pair[0]).to_lowercase();
                // No snapshots to schedule: accepted, nothing to do.
                if name == "save" {
                    continue;
                }
                if ctx.shared.tunables.knows(&name) {
                    tuned.push((name, String::from_utf8_lossy(&pair[1]).into_owned()));
                    continue;
                }
                if name != "appendfsync" {
                    return Err(Reply::error(format!(
                        "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
                    )));
                }
                let value = String::from_utf8_lossy(&pair[1]);
                let policy = FsyncPolicy::parse(&value).ok_or_else(|| {
                    Reply::error(format!(
                        "ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument must be 'always', 'everysec' or 'no', not '{value}'"
                    ))
                })?;
                policies.push(policy);
            }
            // All checked before any is applied, as Redis does.
            for (name, value) in &tuned {
                Tunables::check(name, value).map_err(Reply::error)?;
            }
            for (name, value) in tuned {
                ctx.shared.tunables.set(&name, value);
            }
            for policy in policies {
                ctx.shared.durability.set_policy(policy);
            }
            Ok(Reply::OK)
        }
        b"RESETSTAT" if args.len() == 2 => Ok(Reply::OK),
        _ => Err(unknown_subcommand(&args[1], "CONFIG")),
    }
}

fn unknown_subcommand(sub: &[u8], command: &str) -> Reply {
    Reply::error(format!(
        "ERR unknown subcommand '{}'. Try {command} HELP.",
        String::from_utf8_lossy(sub)
    ))
}

fn command_info(spec: &super::CommandSpec) -> Reply {
    let flags = spec
        .flags
        .iter()
        .map(|f| Reply::Status((*f).to_string()))
        .collect();
    let category = match spec.handler {
        Handler::Write(_) => "@write",
        Handler::Read(_) => "@read",
        Handler::Control(_) => "@connection",
    };
    Reply::Array(vec![
        Reply::bulk(spec.name),
        Reply::Int(spec.arity.into()),
        Reply::Array(flags),
        Reply::Int(spec.first_key.into()),
        Reply::Int(spec.last_key.into()),
        Reply::Int(spec.step.into()),
        Reply::Array(vec![Reply::Status(category.to_string())]),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
    ])
}

fn named_specs(names: &[Vec<u8>]) -> Vec<Option<&'static super::CommandSpec>> {
    names
        .iter()
        .map(|n| super::lookup(n).map(|(_, spec)| spec))
        .collect()
}

pub fn command(_ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let Some(sub) = args.get(1).map(|s| s.to_ascii_uppercase()) else {
        return Ok(Reply::Array(COMMANDS.iter().map(command_info).collect()));
    };
    match sub.as_slice() {
        b"COUNT" if args.len() == 2 => Ok(Reply::Int(COMMANDS.len() as i64)),
        b"LIST" if args.len() == 2 => Ok(Reply::Array(
            COMMANDS.iter().map(|c| Reply::bulk(c.name)).collect(),
        )),
        b"INFO" if args.len() == 2 => Ok(Reply::Array(COMMANDS.iter().map(command_info).collect())),
        b"INFO" => Ok(Reply::Array(
            named_specs(&args[2..])
                .into_iter()
                .map(|s| s.map_or(Reply::NilArray, command_info))
                .collect(),
        )),
        b"DOCS" => {
            let specs: Vec<&super::CommandSpec> = if args.len() == 2 {
                COMMANDS.iter().collect()
            } else {
                named_specs(&args[2..]).into_iter().flatten().collect()
            };
            Ok(Reply::Map(
                specs
                    .into_iter()
                    .map(|spec| {
                        let group = match spec.handler {
                            Handler::Control(_) => "server",
                            _ => "string",
                        };
                        let doc = Reply::Map(vec![
                            (
                                Reply::bulk("summary"),
                                Reply::bulk(format!("{} (thicket-server)", spec.name)),
                            ),
                            (Reply::bulk("since"), Reply::bulk("1.0.0")),
                            (Reply::bulk("group"), Reply::bulk(group)),
                        ]);
                        (Reply::bulk(spec.name), doc)
                    })
                    .collect(),
            ))
        }
        _ => Err(unknown_subcommand(&args[1], "COMMAND")),
    }
}

/// Redis refuses names with spaces, newlines or other special characters.
fn check_client_name(name: &[u8]) -> Result<Vec<u8>, Reply> {
    if name.iter().all(|&b| (b'!'..=b'~').contains(&b)) {
        Ok(name.to_vec())
    } else {
        Err(Reply::error(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ))
    }
}

pub fn client(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let sub = args[1].to_ascii_uppercase();
    match (sub.as_slice(), args.len()) {
        (b"SETNAME", 3) => {
            let name = check_client_name(&args[2])?;
            ctx.session.name = (!name.is_empty()).then_some(name);
            Ok(Reply::OK)
        }
        (b"GETNAME", 2) => Ok(Reply::optional_bulk(ctx.session.name.clone())),
        (b"ID", 2) => Ok(Reply::Int(ctx.session.id as i64)),
        // Client libraries announce themselves; nothing to keep.
        (b"SETINFO", 4) => Ok(Reply::OK),
        (b"SETNAME" | b"GETNAME" | b"ID" | b"SETINFO", _) => {
            let name = String::from_utf8_lossy(&args[1]).to_lowercase();
            Err(arity_error(&format!("client|{name}")))
        }
        _ => Err(unknown_subcommand(&args[1], "CLIENT")),
    }
}
