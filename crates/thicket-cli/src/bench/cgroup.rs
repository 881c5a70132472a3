//! `--memory-limit`: every benchmark child runs in a memory cgroup of its
//! own with the same cap, so that its heap, its block cache and the page
//! cache its files occupy are charged against one limit, as the papers run
//! each store in a container smaller than its data.
//!
//! cgroup v2 (`memory.max`) is used where a cgroup2 mount offers the memory
//! controller, else the v1 memory hierarchy (`memory.limit_in_bytes`); the
//! new group is made under the group this process is in, so a delegated
//! subtree works. The child joins the group itself before it opens
//! anything (`join_from_env`): nothing it allocates is charged elsewhere.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// The environment variable that hands a child the `cgroup.procs` file of
/// the group it joins.
pub const CGROUP_ENV: &str = "THICKET_BENCH_CGROUP_PROCS";

/// What the cgroup saw of one child, read after it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryCapReport {
    /// The cap, bytes (as the kernel rounded it).
    pub limit_bytes: u64,
    /// `1` (v1 memory controller) or `2`.
    pub cgroup_version: u8,
    /// Peak memory charged to the group, page cache included (v1
    /// `memory.max_usage_in_bytes`, v2 `memory.peak`; null where the
    /// kernel has no such file).
    pub peak_bytes: Option<u64>,
    /// Page-cache bytes charged to the group when the child ended.
    pub page_cache_bytes: Option<u64>,
    /// Times the group hit its cap and had to reclaim (v1 `failcnt`, v2
    /// `memory.events` `max`).
    pub limit_hits: Option<u64>,
    /// Processes the kernel killed because the group ran out of memory.
    pub oom_kills: Option<u64>,
    /// Major page faults in the group (`pgmajfault`).
    pub major_faults: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// A memory cgroup made for one child; removed when dropped.
#[derive(Debug)]
pub struct MemoryCgroup {
    dir: PathBuf,
    version: Version,
}

/// Where memory cgroups can be made: the directory of this process's own
/// group in the hierarchy that has the memory controller.
fn parent_group() -> Result<(PathBuf, Version), String> {
    let mounts = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("reading /proc/self/mountinfo: {e}"))?;
    let own = fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("reading /proc/self/cgroup: {e}"))?;
    let mut v1 = None;
    let mut v2 = None;
    for line in mounts.lines() {
        // mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE SOURCE SUPEROPTS
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = left.split_whitespace().collect();
        let rest: Vec<&str> = right.split_whitespace().collect();
        let (Some(mount_point), Some(fstype)) = (fields.get(4), rest.first()) else {
            continue;
        };
        match *fstype {
            "cgroup2" if v2.is_none() => v2 = Some(PathBuf::from(mount_point)),
            "cgroup"
                if v1.is_none()
                    && rest
                        .get(2)
                        .is_some_and(|o| o.split(',').any(|o| o == "memory")) =>
            {
                v1 = Some(PathBuf::from(mount_point))
            }
            _ => {}
        }
    }
    // /proc/self/cgroup: HIERARCHY-ID:CONTROLLERS:PATH; v2 is `0::PATH`.
    let own_path = |controller: Option<&str>| {
        own.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let matches = match controller {
                Some(c) => controllers.split(',').any(|x| x == c),
                None => controllers.is_empty(),
            };
            matches.then(|| path.trim_start_matches('/').to_string())
        })
    };
    if let Some(mount) = v2 {
        let controllers = fs::read_to_string(mount.join("cgroup.controllers")).unwrap_or_default();
        if controllers.split_whitespace().any(|c| c == "memory") {
            if let Some(path) = own_path(None) {
                return Ok((mount.join(path), Version::V2));
            }
        }
    }
    if let Some(mount) = v1 {
        if let Some(path) = own_path(Some("memory")) {
            return Ok((mount.join(path), Version::V1));
        }
    }
    Err(
        "--memory-limit needs a memory cgroup: /proc/self/mountinfo shows neither a cgroup2 \
         mount offering the memory controller nor a cgroup v1 memory hierarchy"
            .into(),
    )
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    fs::write(path, text).map_err(|e| format!("writing {text:?} to {}: {e}", path.display()))
}

fn read_u64(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The number after `name ` in a `memory.stat`-style file.
fn keyed(path: &Path, name: &str) -> Option<u64> {
    let text = fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        let (key, value) = l.split_once(' ')?;
        (key == name).then(|| value.trim().parse().ok())?
    })
}

impl MemoryCgroup {
    /// Makes a new group capped at `limit` bytes.
    pub fn create(limit: u64) -> Result<MemoryCgroup, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let (parent, version) = parent_group()?;
        let name = format!(
            "thicket-bench-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let parent = match version {
            // cgroup v2 lets no group both hold processes and hand the
            // memory controller to children: make the children under a
            // group of ours that holds none, and enable memory there.
            Version::V2 => {
                let holder = parent.join("thicket-bench");
                if !holder.exists() {
                    fs::create_dir(&holder).map_err(|e| cannot_make(&holder, &e.to_string()))?;
                }
                write(&holder.join("cgroup.subtree_control"), "+memory")
                    .map_err(|e| cannot_make(&holder, &e))?;
                holder
            }
            Version::V1 => parent,
        };
        let dir = parent.join(name);
        fs::create_dir(&dir).map_err(|e| cannot_make(&dir, &e.to_string()))?;
        let group = MemoryCgroup { dir, version };
        let limit_file = match version {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        };
        write(&group.dir.join(limit_file), &limit.to_string())?;
        if version == Version::V2 {
            // Without swap off the cap would push anonymous memory to swap
            // rather than the page cache out of memory.
            let _ = write(&group.dir.join("memory.swap.max"), "0");
        }
        Ok(group)
    }

    /// The file a process writes its pid to in order to join.
    pub fn procs_file(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// What the group saw; call after the child ended.
    pub fn report(&self) -> MemoryCapReport {
        let d = &self.dir;
        match self.version {
            Version::V1 => MemoryCapReport {
                limit_bytes: read_u64(&d.join("memory.limit_in_bytes")).unwrap_or(0),
                cgroup_version: 1,
                peak_bytes: read_u64(&d.join("memory.max_usage_in_bytes")),
                page_cache_bytes: keyed(&d.join("memory.stat"), "cache"),
                limit_hits: read_u64(&d.join("memory.failcnt")),
                oom_kills: keyed(&d.join("memory.oom_control"), "oom_kill"),
                major_faults: keyed(&d.join("memory.stat"), "pgmajfault"),
            },
            Version::V2 => MemoryCapReport {
                limit_bytes: read_u64(&d.join("memory.max")).unwrap_or(0),
                cgroup_version: 2,
                peak_bytes: read_u64(&d.join("memory.peak")),
                page_cache_bytes: keyed(&d.join("memory.stat"), "file"),
                limit_hits: keyed(&d.join("memory.events"), "max"),
                oom_kills: keyed(&d.join("memory.events"), "oom_kill"),
                major_faults: keyed(&d.join("memory.stat"), "pgmajfault"),
            },
        }
    }
}

fn cannot_make(dir: &Path, why: &str) -> String {
    format!(
        "--memory-limit: cannot make the memory cgroup {} ({why}); run as root or in a \
         delegated cgroup",
        dir.display()
    )
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // The child has ended; its page cache stays charged to the parent
        // group (v1) or is reparented (v2) when the group goes. A failure
        // leaves an empty group behind, which harms nothing.
        let _ = fs::remove_dir(&self.dir);
    }
}

/// The child's side: joins the group the parent named in `CGROUP_ENV`, if
/// any, before anything is allocated for the engine.
pub fn join_from_env() -> Result<(), String> {
    match std::env::var_os(CGROUP_ENV) {
        None => Ok(()),
        Some(procs) => write(Path::new(&procs), &std::process::id().to_string()),
    }
}

/// Parses a size: bytes, or a number with K, M, G (powers of 1024; an
/// optional trailing `iB` or `B`), e.g. `256M`, `1.5GiB`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (number, shift) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 10),
        Some((i, 'm' | 'M')) => (&t[..i], 20),
        Some((i, 'g' | 'G')) => (&t[..i], 30),
        _ => (t, 0),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a size (e.g. 512M, 2G, 1048576)"))?;
    let bytes = value * (1u64 << shift) as f64;
    if !(bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(format!("{text:?} is not a positive size"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("1048576").unwrap(), 1 << 20);
        assert_eq!(parse_size("256M").unwrap(), 256 << 20);
        assert_eq!(parse_size("256MiB").unwrap(), 256 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("1.5g").unwrap(), 3 << 29);
        assert_eq!(parse_size("64k").unwrap(), 64 << 10);
        for bad in ["", "M", "-1M", "0", "ten", "1T"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
    }
}
