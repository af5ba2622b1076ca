//! Test support shared by the integration tests of every foliosim crate:
//! scenario TOML built from fragments, a few scenarios several crates'
//! tests run, and scenario files in scratch directories. No foliosim
//! dependency, so any crate's tests can use it.
//!
//! Each fragment returns complete TOML lines ending in a newline, so a
//! scenario is the `concat()` of an array of them; a step's optional keys
//! (`len = "64K"`, `offset = "4K"`) go in `extra`, one per line (a blank
//! line is harmless in TOML).

use std::path::{Path, PathBuf};

/// The `name = ...` line that opens a scenario.
pub fn name(name: &str) -> String {
    format!("name = \"{name}\"\n")
}

/// The `[system]` table every simulator test starts from: a small machine
/// so the invariant checker is cheap, plus `extra` lines.
pub fn system(extra: &str) -> String {
    system_mem("512M", extra)
}

/// A `[system]` table with `memory` of RAM, plus `extra` lines.
pub fn system_mem(memory: &str, extra: &str) -> String {
    format!("[system]\nmemory = \"{memory}\"\n{extra}\n")
}

/// A `[[system.swap]]` table: one swap device of `kind` ("file", "block",
/// "zram") and `size`. It must follow the `[system]` keys.
pub fn swap(kind: &str, size: &str) -> String {
    format!("[[system.swap]]\nkind = \"{kind}\"\nsize = \"{size}\"\n")
}

/// The mTHP knob line for one size (in kB).
pub fn mthp(kb: u64, mode: &str) -> String {
    format!("transparent_hugepage.hugepages-{kb}kB.enabled = \"{mode}\"\n")
}

/// A `[[file]]` table: a file `name` of `size`, plus `extra` keys
/// (`fill = "write"`, `write_size = "4K"`).
pub fn file(name: &str, size: &str, extra: &str) -> String {
    format!("[[file]]\nname = \"{name}\"\nsize = \"{size}\"\n{extra}\n")
}

/// An mmap step of `size` bytes of private anon memory named `region`.
pub fn mmap_anon(region: &str, size: &str) -> String {
    mmap(region, "anon", size, "")
}

/// An mmap step of `kind` ("anon", "file", "shmem"), plus `extra` keys
/// (`file = "data"`, `prot = "r"`, `map = true`).
pub fn mmap(region: &str, kind: &str, size: &str, extra: &str) -> String {
    format!(
        "[[step]]\nop = \"mmap\"\nregion = \"{region}\"\nkind = \"{kind}\"\nsize = \"{size}\"\n{extra}\n"
    )
}

/// An mmap step of `size` bytes of the scenario file `file` (MAP_PRIVATE
/// unless `extra` says `shared = true`), plus `extra` keys.
pub fn mmap_file(region: &str, file: &str, size: &str, extra: &str) -> String {
    mmap(region, "file", size, &format!("file = \"{file}\"\n{extra}"))
}

/// A munmap step of the whole of `region`.
pub fn munmap(region: &str) -> String {
    format!("[[step]]\nop = \"munmap\"\nregion = \"{region}\"\n")
}

/// A touch step of `region` with `access` ("read" or "write"), plus
/// `extra` keys.
pub fn touch(region: &str, access: &str, extra: &str) -> String {
    format!("[[step]]\nop = \"touch\"\nregion = \"{region}\"\naccess = \"{access}\"\n{extra}\n")
}

/// [`mmap_anon`] followed by a write touch of the whole region: `size`
/// bytes of anon memory, every page written.
pub fn anon_written(region: &str, size: &str) -> String {
    mmap_anon(region, size) + &touch(region, "write", "")
}

/// A madvise step of `region` with `advice`, plus `extra` keys.
pub fn madvise(region: &str, advice: &str, extra: &str) -> String {
    format!("[[step]]\nop = \"madvise\"\nregion = \"{region}\"\nadvice = \"{advice}\"\n{extra}\n")
}

/// A pagemap step: read `region`'s pagemap entries, plus `extra` keys
/// (`offset`, `len`, `read_size`).
pub fn pagemap(region: &str, extra: &str) -> String {
    format!("[[step]]\nop = \"pagemap\"\nregion = \"{region}\"\n{extra}\n")
}

/// A step without parameters (`fork`, `wait`, `join`, `force_empty`).
pub fn step(op: &str) -> String {
    format!("[[step]]\nop = \"{op}\"\n")
}

/// A step of `op` with `extra` keys (`limit = "16M"`, `amount = "1M"`).
pub fn step_with(op: &str, extra: &str) -> String {
    format!("[[step]]\nop = \"{op}\"\n{extra}\n")
}

/// A phase step: the counters from here on are reported under `name`.
pub fn phase(name: &str) -> String {
    format!("[[step]]\nop = \"phase\"\nname = \"{name}\"\n")
}

/// The steps in `steps` (fragments above) as steps of the child of the
/// `fork` step before them (`[[step.child]]`).
pub fn child(steps: &str) -> String {
    steps.replace("[[step]]", "[[step.child]]")
}

/// A `threads` step: `count` threads that start `after` ("sleep",
/// "spin", ...); their steps follow as [`thread`] fragments.
pub fn threads(count: u32, after: &str) -> String {
    format!("[[step]]\nop = \"threads\"\ncount = {count}\nafter = \"{after}\"\n")
}

/// The steps in `steps` as steps of the `threads` step before them
/// (`[[step.thread]]`).
pub fn thread(steps: &str) -> String {
    steps.replace("[[step]]", "[[step.thread]]")
}

/// `size` of anonymous memory written once after the phase "measured"
/// begins, on a machine with `memory` of RAM and no swap.
pub fn anon_measured(name_: &str, memory: &str, size: &str) -> String {
    [
        name(name_),
        system_mem(memory, ""),
        mmap_anon("buf", size),
        phase("measured"),
        touch("buf", "write", ""),
    ]
    .concat()
}

/// 64 GiB of anon memory read once per 2 MiB on a 64 MiB machine: each
/// read maps the shared zero page and needs a new PTE table, so the page
/// tables outgrow the machine (the model's out-of-memory limit).
pub fn page_tables_beyond_memory() -> String {
    [
        system_mem("64M", ""),
        mmap_anon("a", "64G"),
        touch("a", "read", "pattern = \"one-per-pt\""),
    ]
    .concat()
}

/// Scenarios whose cost once grew faster than their text: the regression
/// cases of the parser, the memory estimate and the page-table walks
/// (their tests and the fuzz targets run them).
pub mod big {
    use std::fmt::Write as _;

    /// `n` `[[file]]` tables `f0` ... (one page each, cold) on a 64 MiB
    /// machine, and a mapping of the last one.
    pub fn many_files(n: usize) -> String {
        let mut s = super::system_mem("64M", "");
        for i in 0..n {
            let _ = write!(
                s,
                "[[file]]\nname = \"f{i}\"\nsize = 4096\nfill = \"cold\"\n"
            );
        }
        let last = format!("f{}", n.saturating_sub(1));
        s + &super::mmap_file("a", &last, "4K", "")
    }

    /// A 64 KiB anonymous region on a 64 MiB machine and `n` phases
    /// `p0` ... that measure nothing.
    pub fn many_phases(n: usize) -> String {
        let mut s = super::system_mem("64M", "") + &super::mmap_anon("a", "64K");
        for i in 0..n {
            let _ = write!(s, "[[step]]\nop = \"phase\"\nname = \"p{i}\"\n");
        }
        s
    }

    /// An anonymous mapping of `size` on a 2 GiB machine, then its munmap.
    pub fn mmap_munmap(size: &str) -> String {
        [
            super::system_mem("2G", ""),
            super::mmap_anon("a", size),
            super::munmap("a"),
        ]
        .concat()
    }
}

/// The path of the file `rel` of the repository (`docs/...`,
/// `scenarios/...`) and its text.
pub fn repo_file(rel: &str) -> (PathBuf, String) {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(rel);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    (path, text)
}

/// Write `text` to `dir/name` and return the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap_or_else(|e| panic!("writing {}: {e}", p.display()));
    p
}

/// Whether this process runs as root (effective uid 0, from
/// /proc/self/status): tests that change or read the host's memory
/// management need it and skip, saying so, without.
pub fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0")
}

/// Assert that `text` contains `part`, showing all of `text` if not.
#[track_caller]
pub fn assert_contains(text: &str, part: &str) {
    assert!(text.contains(part), "no {part:?} in:\n{text}");
}

/// Assert that `text` starts with `prefix`, showing all of `text` if not.
#[track_caller]
pub fn assert_starts_with(text: &str, prefix: &str) {
    assert!(
        text.starts_with(prefix),
        "{text:?} does not start with {prefix:?}"
    );
}
