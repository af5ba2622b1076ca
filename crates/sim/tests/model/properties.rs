//! Randomised scenarios, checked step by step by the model's invariant
//! checker (mapcounts, rss_stat, PageAnonExclusive, page-cache slots,
//! allocator accounting: crates/kernel/src/mm/debug.rs), on both
//! architectures, plus determinism (the same scenario twice gives
//! byte-identical JSON reports).
//!
//! Scenarios are generated as TOML text by a deterministic generator driven
//! by `foliosim_scenario::SplitMix64`, one seed per case: mmap of anon /
//! file / shmem regions (4 KiB .. 8 MiB, random offsets, prot, shared,
//! madvise), touches (read/write; sequential, random, stride, one-per-pt;
//! sub-ranges of what is mapped), fork with child steps (nested forks
//! only with the `three_processes` switch), wait, munmap and madvise (hugepage / nohugepage / dontneed / random /
//! sequential / normal) of sub-ranges, random mTHP settings, top-level
//! `enabled`, use_zero_page, fault_around_bytes and read_ahead_kb.
//! The generator only produces valid programs: touches stay inside mapped,
//! accessible, in-file pages, so every run must succeed.
//!
//! A failing case reports its seed, and the first failure its whole
//! scenario.
//!
//! Environment knobs:
//! * `FOLIOSIM_PROP_CASES=N` — cases per architecture (default 1500);
//! * `FOLIOSIM_PROP_SEED=S` — run only the case with seed S (its TOML is
//!   printed with `--nocapture`);
//! * `FOLIOSIM_PROP_OFF=switch,...` — turn generator switches off, to
//!   narrow a failing case down (see [`Options`]);
//! * `FOLIOSIM_PROP_FIRST=K` — start at case K (cases K .. K+N-1), to
//!   split a long run into pieces;
//! * `FOLIOSIM_PROP_STEPS=N` — operations per generated scenario, those
//!   of fork children included (default: 4 to 23 top-level steps, drawn
//!   per case). With it set (the long mode), every case prints its times
//!   and runs once: determinism is the short cases' job, and a long case
//!   is worth more as a second seed than as a second run.
//!
//! The long run before a release (docs/benchmarks.md, "The model checked at
//! scale", gives its result):
//! `FOLIOSIM_PROP_STEPS=1000000 FOLIOSIM_PROP_CASES=100 cargo test --release
//! -p foliosim-sim --test model -- --ignored long_random_runs`.

use crate::common;

use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};

use foliosim_report::{render, Format};
use foliosim_scenario::SplitMix64;

const PAGE: u64 = 4096;

struct Rng(SplitMix64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        self.0.next_u64() % n
    }
    fn range(&mut self, lo: u64, hi_incl: u64) -> u64 {
        lo + self.below(hi_incl - lo + 1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Anon,
    File,
    Shmem,
}

#[derive(Clone)]
struct Region {
    name: String,
    kind: Kind,
    shared: bool,
    writable: bool,
    /// Per page: still mapped in this process.
    mapped: Vec<bool>,
    /// Length in pages (file mappings never reach past the file's last
    /// page, so every page of a file region can be touched).
    pages: u64,
    /// Existed at a fork: its private pages may be shared with another mm.
    cow: bool,
}

struct FileDef {
    name: String,
    /// Pages that hold data (the last one may be partial).
    pages: u64,
}

/// What the generator may do: every switch is on in the tests ([`ALL`]);
/// `FOLIOSIM_PROP_OFF=a,b` turns some off, to narrow down a failing case.
/// Each switch once found a model bug, now pinned by a regression test in
/// faults.rs (named below).
#[derive(Clone, Copy)]
struct Options {
    /// Allow writes to private regions that existed at a fork (COW of anon
    /// pages, reuse of pages that are exclusive again).
    cow_writes: bool,
    /// Allow a fork after such a write: a large folio whose PTEs then differ
    /// in their write bits (`fork_merges_write_bit_of_large_folio_batch`).
    fork_after_cow_write: bool,
    /// Allow a fork after a madvise that changed VM flags on part of a
    /// region, i.e. a VMA split that may cut a PMD-mapped THP
    /// (`vma_split_inside_pmd_thp_then_fork`).
    split_then_fork: bool,
    /// Allow a fork after a write to a private file mapping: the VMA then has
    /// an anon_vma and fork copies its page tables, PMD-mapped page-cache
    /// THPs included (`fork_after_private_file_cow_with_file_pmd`).
    private_file_fork: bool,
    /// Allow more than two processes at a time (nested forks, several live
    /// children), so that a large folio can be mapped by three mms
    /// (`three_processes_then_slot_reuse`).
    three_processes: bool,
}

struct Gen {
    rng: Rng,
    /// A second generator for the reclaim additions (MADV_COLD/FREE, a
    /// small machine), so the main one's sequence, and with it every
    /// scenario generated before they existed, is unchanged.
    extra: Rng,
    opts: Options,
    out: String,
    files: Vec<FileDef>,
    next_region: u32,
    next_phase: u32,
    /// Pages mapped now by the top-level process plus those its children
    /// mapped since the last `wait` (keeps memory bounded; a munmap and
    /// the children's exit give pages back, so memory stays busy in a long
    /// scenario).
    budget_pages: u64,
    /// The children's part of `budget_pages`.
    child_pages: u64,
    /// A flag-changing madvise of a sub-range was generated.
    split_done: bool,
    /// A private file mapping was written.
    private_file_written: bool,
    /// A private region that existed at a fork was written.
    cow_written: bool,
    /// Live children of the top-level process.
    live_children: u32,
    /// The long mode: no phase marks after the first (a report phase
    /// snapshots every counter and every region's folios; tens of
    /// thousands of them cost gigabytes and test nothing new).
    long: bool,
}

const MAX_PAGES: u64 = 12 * 1024; // 48 MiB of mappings per scenario
/// The long mode's budget, on a 64 MiB machine: the invariant checker
/// walks every allocated page after every operation, so a long case's
/// cost per operation follows the memory in use; long cases are about
/// long histories (fork after fork, reuse, recycling), the short ones
/// cover sizes.
const LONG_MAX_PAGES: u64 = 1024;
/// The long mode's largest file (a 2 MiB file still fits a PMD folio).
const LONG_MAX_FILE: u64 = 2 << 20;

impl Gen {
    fn system(&mut self, arch: &str) {
        // A 64 MiB machine now and then: files and mappings (up to 72 MiB)
        // no longer fit, and allocations reclaim directly (global pressure).
        // The long mode always: its checker walks stay small (see `long`).
        let small = self.extra.chance(30);
        let memory = if small || self.long { "64M" } else { "256M" };
        let r = &mut self.rng;
        let mut s = String::new();
        let _ = writeln!(s, "[system]\narch = \"{arch}\"\nmemory = \"{memory}\"");
        let top = *r.pick(&["always", "madvise", "never", "madvise"]);
        let _ = writeln!(s, "transparent_hugepage.enabled = \"{top}\"");
        if r.chance(20) {
            let _ = writeln!(s, "transparent_hugepage.use_zero_page = 0");
        }
        for kb in [16, 32, 64, 128, 256, 512, 1024, 2048] {
            let mode = if kb == 2048 {
                *r.pick(&["inherit", "inherit", "always", "madvise", "never"])
            } else {
                *r.pick(&["never", "never", "always", "inherit", "madvise"])
            };
            let _ = writeln!(
                s,
                "transparent_hugepage.hugepages-{kb}kB.enabled = \"{mode}\""
            );
        }
        let fab = match r.below(4) {
            0 => "65536".to_string(),
            1 => format!("\"4096<<{}\"", r.below(11)),
            _ => format!("{}", r.range(1, 3 << 20)),
        };
        let _ = writeln!(s, "fault_around_bytes = {fab}");
        let ra = *r.pick(&[0u64, 16, 128, 128, 512, 8192]);
        let _ = writeln!(s, "read_ahead_kb = {ra}");
        if r.chance(50) {
            let _ = writeln!(s, "series.batch_anon_unmap = {}", r.chance(50));
        }
        // Reclaim and swap: zero to two swap areas of any kind, small enough
        // to fill up now and then.
        for _ in 0..r.below(3) {
            let kind = *r.pick(&["file", "block", "zram"]);
            let mib = *r.pick(&[1u64, 4, 16, 64]);
            let _ = writeln!(s, "[[system.swap]]\nkind = \"{kind}\"\nsize = \"{mib}M\"");
        }
        self.out += &s;
    }

    fn files(&mut self) {
        let n = self.rng.range(0, 3);
        for i in 0..n {
            let r = &mut self.rng;
            let size: u64 = match r.below(6) {
                0 => r.range(1, 5 * PAGE),
                1 => 64 << 10,
                2 => (4 << 20) + 12 * 1024 + 100,
                3 => 8 << 20,
                4 => 2 << 20,
                _ => r.range(1, 2048) * PAGE,
            };
            // The long mode keeps its page cache small, as its mappings.
            let size = if self.long {
                size.min(LONG_MAX_FILE)
            } else {
                size
            };
            let fill = match r.below(7) {
                0 => "fill = \"cold\"".to_string(),
                1 => format!(
                    "fill = \"read\"\nread_size = {}",
                    *r.pick(&[4096u64, 65536, 131072, 1 << 20, 5000])
                ),
                _ => format!(
                    "fill = \"write\"\nwrite_size = \"{}\"",
                    *r.pick(&["4K", "16K", "64K", "1M", "2M", "12K"])
                ),
            };
            let name = format!("f{i}");
            let _ = writeln!(
                self.out,
                "\n[[file]]\nname = \"{name}\"\nsize = {size}\n{fill}"
            );
            self.files.push(FileDef {
                name,
                pages: size.div_ceil(PAGE),
            });
        }
    }

    fn size_pages(&mut self, max: u64) -> u64 {
        let r = &mut self.rng;
        let p = match r.below(5) {
            0 => *r.pick(&[1u64, 3, 4, 16, 20, 24, 100, 256, 511, 512, 513, 1024, 2048]),
            1 => 512 * r.range(1, 4),
            _ => r.range(1, 2048),
        };
        p.clamp(1, max.max(1))
    }

    fn step_mmap(&mut self, regions: &mut Vec<Region>, indent: &str) {
        let max = if self.long { LONG_MAX_PAGES } else { MAX_PAGES };
        let remaining = max.saturating_sub(self.budget_pages);
        if remaining == 0 {
            return;
        }
        let kind = match self.rng.below(10) {
            0..=4 => Kind::Anon,
            5..=7 if !self.files.is_empty() => Kind::File,
            _ => Kind::Shmem,
        };
        let name = format!("r{}", self.next_region);
        self.next_region += 1;
        let mut s = format!("\n[[{indent}]]\nop = \"mmap\"\nregion = \"{name}\"\n");
        let (pages, shared, writable);
        match kind {
            Kind::Anon => {
                pages = self.size_pages(remaining);
                shared = false;
                writable = !self.rng.chance(10);
                s += "kind = \"anon\"\n";
            }
            Kind::Shmem => {
                pages = self.size_pages(remaining);
                shared = true;
                writable = !self.rng.chance(10);
                s += "kind = \"shmem\"\nshared = true\n";
            }
            Kind::File => {
                let fi = self.rng.below(self.files.len() as u64) as usize;
                let fpages = self.files[fi].pages;
                let off = if self.rng.chance(50) {
                    0
                } else {
                    self.rng.below(fpages)
                };
                pages = self.size_pages((fpages - off).min(remaining));
                shared = self.rng.chance(40);
                writable = !self.rng.chance(25);
                let _ = write!(
                    s,
                    "kind = \"file\"\nfile = \"{}\"\noffset = {}\nshared = {shared}\n",
                    self.files[fi].name,
                    off * PAGE
                );
            }
        }
        let _ = writeln!(s, "size = {}", pages * PAGE);
        if !writable {
            s += "prot = \"r\"\n";
        }
        let mut adv = Vec::new();
        for a in ["hugepage", "nohugepage", "random", "sequential"] {
            if self.rng.chance(15) {
                adv.push(format!("\"{a}\""));
            }
        }
        if !adv.is_empty() {
            let _ = writeln!(s, "madvise = [{}]", adv.join(", "));
        }
        self.out += &s;
        self.budget_pages += pages;
        if indent != "step" {
            self.child_pages += pages;
        }
        regions.push(Region {
            name,
            kind,
            shared,
            writable,
            mapped: vec![true; pages as usize],
            pages,
            cow: false,
        });
    }

    /// A random page range [start, start + len) of `reg` inside one run of
    /// pages that this process still maps.
    fn pick_range(&mut self, reg: &Region) -> Option<(u64, u64)> {
        let n = reg.pages;
        let mapped: Vec<u64> = (0..n).filter(|&i| reg.mapped[i as usize]).collect();
        if mapped.is_empty() {
            return None;
        }
        let start = *self.rng.pick(&mapped);
        let mut end = start;
        while end < n && reg.mapped[end as usize] {
            end += 1;
        }
        let max_len = end - start;
        let len = match self.rng.below(3) {
            0 => max_len,
            _ => self.rng.range(1, max_len),
        };
        Some((start, len))
    }

    /// A random region (its index) and a mapped range of it, or None
    /// when there is no region or the one picked has nothing mapped.
    fn pick_region(&mut self, regions: &[Region]) -> Option<(usize, u64, u64)> {
        if regions.is_empty() {
            return None;
        }
        let i = self.rng.below(regions.len() as u64) as usize;
        let (start, len) = self.pick_range(&regions[i])?;
        Some((i, start, len))
    }

    fn range_keys(&mut self, reg: &Region, start: u64, len: u64) -> String {
        let mut s = String::new();
        // Use the defaults (whole region) when they say the same.
        if start != 0 || self.rng.chance(50) {
            let _ = writeln!(s, "offset = {}", start * PAGE);
        }
        if start + len != reg.pages || self.rng.chance(50) {
            let _ = writeln!(s, "len = {}", len * PAGE);
        }
        s
    }

    fn step_touch(&mut self, regions: &[Region], indent: &str) {
        let Some((i, start, len)) = self.pick_region(regions) else {
            return;
        };
        let reg = regions[i].clone();
        let private_cow = !reg.shared && reg.cow && !self.opts.cow_writes;
        let write = reg.writable && !private_cow && self.rng.chance(55);
        if write && reg.kind == Kind::File && !reg.shared {
            self.private_file_written = true;
        }
        if write && !reg.shared && reg.cow {
            self.cow_written = true;
        }
        let mut s = format!(
            "\n[[{indent}]]\nop = \"touch\"\nregion = \"{}\"\naccess = \"{}\"\n",
            reg.name,
            if write { "write" } else { "read" }
        );
        match self.rng.below(6) {
            0..=2 => {}
            3 => {
                let _ = writeln!(s, "pattern = \"random\"");
                if self.rng.chance(50) {
                    let _ = writeln!(s, "seed = {}", self.rng.below(1000));
                }
            }
            4 => {
                let stride = *self.rng.pick(&[1u64, 2, 3, 16, 17, 64, 512]);
                let _ = writeln!(s, "pattern = \"stride\"\nstride = {}", stride * PAGE);
            }
            _ => {
                let _ = writeln!(s, "pattern = \"one-per-pt\"");
            }
        }
        s += &self.range_keys(&reg, start, len);
        self.out += &s;
    }

    fn step_munmap(&mut self, regions: &mut Vec<Region>, indent: &str) {
        // Only what is still mapped: an unmapped part of a region may have
        // been reused by a later mmap, which a munmap by name would hit.
        let Some((i, start, len)) = self.pick_region(regions) else {
            return;
        };
        let reg = regions[i].clone();
        let keys = self.range_keys(&reg, start, len);
        let _ = write!(
            self.out,
            "\n[[{indent}]]\nop = \"munmap\"\nregion = \"{}\"\n{keys}",
            reg.name
        );
        for p in start..start + len {
            regions[i].mapped[p as usize] = false;
        }
        if indent == "step" {
            self.budget_pages -= len;
        }
        if !regions[i].mapped.contains(&true) {
            regions.remove(i);
        }
    }

    fn step_madvise(&mut self, regions: &[Region], indent: &str) {
        let Some((i, start, len)) = self.pick_region(regions) else {
            return;
        };
        let reg = regions[i].clone();
        let advice = *self.rng.pick(&[
            "pageout",
            "pageout",
            "dontneed",
            "dontneed",
            "hugepage",
            "hugepage",
            "nohugepage",
            "random",
            "sequential",
            "normal",
        ]);
        // MADV_COLD in place of some MADV_PAGEOUTs, MADV_FREE in place of
        // some MADV_DONTNEEDs of private anon memory (EINVAL elsewhere).
        let advice = match advice {
            "pageout" if self.extra.chance(35) => "cold",
            "dontneed" if reg.kind == Kind::Anon && !reg.shared && self.extra.chance(50) => "free",
            a => a,
        };
        let range_only = ["dontneed", "pageout", "cold", "free"];
        if !range_only.contains(&advice) && (start != 0 || len != reg.pages) {
            self.split_done = true;
        }
        let keys = self.range_keys(&reg, start, len);
        let _ = write!(
            self.out,
            "\n[[{indent}]]\nop = \"madvise\"\nregion = \"{}\"\nadvice = \"{advice}\"\n{keys}",
            reg.name
        );
    }

    fn may_fork(&self, depth: u32) -> bool {
        let o = self.opts;
        let procs_ok = if o.three_processes {
            depth < 2
        } else {
            depth == 0 && self.live_children == 0
        };
        procs_ok
            && (o.split_then_fork || !self.split_done)
            && (o.private_file_fork || !self.private_file_written)
            && (o.fork_after_cow_write || !self.cow_written)
    }

    /// `n` steps of one process at fork depth `depth`.
    fn steps(&mut self, regions: &mut Vec<Region>, n: u64, depth: u32) {
        let indent = match depth {
            0 => "step".to_string(),
            d => format!("step{}", ".child".repeat(d as usize)),
        };
        for _ in 0..n {
            match self.rng.below(100) {
                0..=17 => self.step_mmap(regions, &indent),
                18..=57 => self.step_touch(regions, &indent),
                58..=65 => self.step_munmap(regions, &indent),
                66..=79 => self.step_madvise(regions, &indent),
                80..=87 if self.may_fork(depth) => {
                    let _ = write!(self.out, "\n[[{indent}]]\nop = \"fork\"\n");
                    if depth == 0 {
                        self.live_children += 1;
                    }
                    for reg in regions.iter_mut() {
                        reg.cow = true;
                    }
                    let mut child = regions.clone();
                    let k = self.rng.range(0, 6);
                    self.steps(&mut child, k, depth + 1);
                }
                88..=91 => {
                    let _ = write!(self.out, "\n[[{indent}]]\nop = \"wait\"\n");
                    if depth == 0 {
                        self.live_children = 0;
                        self.budget_pages -= std::mem::take(&mut self.child_pages);
                    }
                }
                _ if depth == 0 && !self.long => {
                    self.next_phase += 1;
                    let _ = write!(
                        self.out,
                        "\n[[step]]\nop = \"phase\"\nname = \"p{}\"\n",
                        self.next_phase
                    );
                }
                _ => {}
            }
        }
    }
}

/// The scenario for `seed` on `arch`.
fn generate(seed: u64, arch: &str, opts: Options) -> String {
    let mut g = Gen {
        rng: Rng(SplitMix64::new(seed)),
        extra: Rng(SplitMix64::new(seed ^ 0x5eed_c01d_f4ee)),
        opts,
        out: String::new(),
        files: Vec::new(),
        next_region: 0,
        next_phase: 0,
        budget_pages: 0,
        child_pages: 0,
        split_done: false,
        private_file_written: false,
        cow_written: false,
        live_children: 0,
        long: std::env::var("FOLIOSIM_PROP_STEPS").is_ok(),
    };
    let _ = writeln!(g.out, "name = \"prop-{seed}\"\nseed = {}", seed % 1000);
    g.system(arch);
    g.files();
    let mut regions = Vec::new();
    // Something to work on, then a phase so the report has content.
    g.step_mmap(&mut regions, "step");
    g.out += "\n[[step]]\nop = \"phase\"\nname = \"p0\"\n";
    match std::env::var("FOLIOSIM_PROP_STEPS") {
        // The long mode: top-level steps until the scenario holds `n`
        // operations, those of fork children included.
        Ok(v) => {
            let n: usize = v.parse().expect("FOLIOSIM_PROP_STEPS is a number");
            let mut ops = g.out.matches("\nop = ").count();
            while ops < n {
                let at = g.out.len();
                g.steps(&mut regions, 1, 0);
                ops += g.out[at..].matches("\nop = ").count();
            }
        }
        Err(_) => {
            let n = g.rng.range(4, 24);
            g.steps(&mut regions, n, 0);
        }
    }
    g.out
}

/// Run `text` with the checker after every step. Short cases run twice
/// and must give byte-identical JSON reports; a `long` case runs once.
fn check_case(seed: u64, text: &str, long: bool) -> Result<(), String> {
    let once = || {
        catch_unwind(AssertUnwindSafe(|| common::try_run_with(text, &[])))
            .map_err(|p| {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                format!("panic: {msg}")
            })?
            .map_err(|e| e.to_string())
    };
    let a = once().map_err(|e| format!("seed {seed}: {e}"))?;
    if long {
        return Ok(());
    }
    let b = once().map_err(|e| format!("seed {seed} (second run): {e}"))?;
    let (ja, jb) = (render(&[a], Format::Json), render(&[b], Format::Json));
    if ja != jb {
        return Err(format!("seed {seed}: two runs gave different reports"));
    }
    Ok(())
}

/// The seeds to run: `FOLIOSIM_PROP_SEED` alone, or `FOLIOSIM_PROP_CASES`
/// (default `default`) seeds `i ^ salt`, `i` from `FOLIOSIM_PROP_FIRST`
/// (default 0).
fn seeds(salt: u64, default: u64) -> Vec<u64> {
    if let Ok(s) = std::env::var("FOLIOSIM_PROP_SEED") {
        return vec![s.parse().expect("FOLIOSIM_PROP_SEED is a number")];
    }
    let n = std::env::var("FOLIOSIM_PROP_CASES")
        .ok()
        .map(|s| s.parse().expect("FOLIOSIM_PROP_CASES is a number"))
        .unwrap_or(default);
    let first: u64 = std::env::var("FOLIOSIM_PROP_FIRST")
        .ok()
        .map(|s| s.parse().expect("FOLIOSIM_PROP_FIRST is a number"))
        .unwrap_or(0);
    (first..first + n).map(|i| i ^ salt).collect()
}

/// `FOLIOSIM_PROP_OFF=a,b` turns generator switches off (by field name).
fn env_options(mut o: Options) -> Options {
    if let Ok(list) = std::env::var("FOLIOSIM_PROP_OFF") {
        for name in list.split(',').filter(|s| !s.is_empty()) {
            match name {
                "cow_writes" => o.cow_writes = false,
                "fork_after_cow_write" => o.fork_after_cow_write = false,
                "split_then_fork" => o.split_then_fork = false,
                "private_file_fork" => o.private_file_fork = false,
                "three_processes" => o.three_processes = false,
                _ => panic!("FOLIOSIM_PROP_OFF: unknown switch {name:?}"),
            }
        }
    }
    o
}

fn run_cases(arch: &str, salt: u64, default: u64, opts: Options) {
    let opts = env_options(opts);
    let mut failures = Vec::new();
    // With FOLIOSIM_PROP_STEPS set (the long mode), each case's times.
    let timed = std::env::var("FOLIOSIM_PROP_STEPS").is_ok();
    for seed in seeds(salt, default) {
        let t0 = std::time::Instant::now();
        let text = generate(seed, arch, opts);
        if std::env::var("FOLIOSIM_PROP_SEED").is_ok() && !timed {
            println!("{text}");
        }
        let t1 = std::time::Instant::now();
        let res = check_case(seed, &text, timed);
        if timed {
            let steps = text.matches("\nop = ").count();
            let run = t1.elapsed();
            println!(
                "{arch} seed {seed:#x}: {steps} operations, generated in {:.1} s, run in {:.1} s \
                 ({:.1} us per operation){}",
                (t1 - t0).as_secs_f64(),
                run.as_secs_f64(),
                run.as_secs_f64() * 1e6 / steps.max(1) as f64,
                if res.is_ok() { "" } else { ", FAILED" }
            );
        }
        if let Err(e) = res {
            failures.push((e, text));
        }
    }
    if let Some((e, text)) = failures.first() {
        let all: Vec<&str> = failures.iter().map(|(e, _)| e.as_str()).collect();
        panic!(
            "{} of the {arch} cases failed:\n{}\n\n--- first failing scenario ---\n{text}\n--- {e}",
            failures.len(),
            all.join("\n")
        );
    }
}

const ALL: Options = Options {
    cow_writes: true,
    fork_after_cow_write: true,
    split_then_fork: true,
    private_file_fork: true,
    three_processes: true,
};

/// The long mode: `FOLIOSIM_PROP_CASES` scenarios (default 100) of
/// `FOLIOSIM_PROP_STEPS` operations (default 10^6) per architecture,
/// checker after every operation. Hours; run before a release, not in CI.
#[test]
#[ignore]
fn long_random_runs() {
    if std::env::var("FOLIOSIM_PROP_STEPS").is_err() {
        std::env::set_var("FOLIOSIM_PROP_STEPS", "1000000");
    }
    let t0 = std::time::Instant::now();
    run_cases("x86_64", 0x10_0000, 100, ALL);
    run_cases("arm64", 0x20_0000, 100, ALL);
    println!("long_random_runs: all cases passed in {:?}", t0.elapsed());
}

/// 1500 random scenarios on x86_64 (checker after every step, determinism).
#[test]
fn random_scenarios_x86_64() {
    run_cases("x86_64", 0, 1500, ALL);
}

/// 1500 random scenarios on arm64 (contpte painting, folding and
/// unfolding under the same workloads).
#[test]
fn random_scenarios_arm64() {
    run_cases("arm64", 0x5eed_0000, 1500, ALL);
}

/// x86_64 and arm64 fault alike on random workloads too (see
/// arch_conformance.rs): the same scenario gives the same kernel-visible
/// counters (everything but `sim/*` and x86's `exceptions:*` tracepoint)
/// and the same folio histograms on both. LRU activity is left out: x86
/// maps fault-around PTEs young and arm64 old, so zapping them marks
/// different folios accessed (`pgactivate`, `nr_{in,}active_*`).
#[test]
fn random_scenarios_conform_across_architectures() {
    let mut failures = Vec::new();
    for seed in seeds(0xa5c4, 400) {
        let text = generate(seed, "x86_64", ALL);
        let x = common::run_with(&text, &[]);
        let a = common::run_with(&text, &[("system.arch", "arm64")]);
        for (px, pa) in x.phases.iter().zip(&a.phases) {
            let keep = |k: &String| {
                !k.starts_with("sim/")
                    && !k.starts_with("exceptions:")
                    && !k.starts_with("tlb:")
                    && !k.starts_with("nr_")
                    && *k != "pgactivate"
            };
            let cx: Vec<_> = px.counters.iter().filter(|(k, _)| keep(k)).collect();
            let ca: Vec<_> = pa.counters.iter().filter(|(k, _)| keep(k)).collect();
            if cx != ca || px.folios != pa.folios {
                let diff: Vec<String> = cx
                    .iter()
                    .zip(&ca)
                    .filter(|(l, r)| l != r)
                    .map(|(l, r)| format!("{} {} vs {} {}", l.0, l.1, r.0, r.1))
                    .collect();
                failures.push(format!(
                    "seed {seed} phase {}: {diff:?} folios equal: {}",
                    px.name,
                    px.folios == pa.folios
                ));
                break;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The random workloads are not vacuous: over 300 cases per architecture
/// they reach every interesting path at least once (PMD THP and mTHP
/// allocation, the huge zero page, file PMD mapping, PMD splits, deferred
/// split, COW and reuse, major faults, readahead retries, fault-around,
/// and on arm64 contiguous blocks).
#[test]
fn random_scenarios_reach_the_interesting_paths() {
    for (arch, salt) in [("x86_64", 0x11), ("arm64", 0x12)] {
        let mut total: std::collections::BTreeMap<String, i64> = Default::default();
        for seed in (0..300u64).map(|i| i ^ salt) {
            let text = generate(seed, arch, ALL);
            let r = common::run_with(&text, &[]);
            for p in &r.phases {
                for (k, v) in &p.counters {
                    *total.entry(k.clone()).or_default() += v;
                }
            }
        }
        let mut want = vec![
            "pgfault",
            "major-faults",
            "pgmajfault",
            "pgreuse",
            "thp_fault_alloc",
            "thp_file_mapped",
            "thp_split_pmd",
            "thp_deferred_split_page",
            "thp_zero_page_alloc",
            "hugepages-16kB/anon_fault_alloc",
            "hugepages-64kB/anon_fault_alloc",
            "hugepages-1024kB/anon_fault_alloc",
            "*/split_deferred",
            "filemap:mm_filemap_map_pages",
            "filemap:mm_filemap_fault",
            "sim/fault_retry",
            "sim/page_copy",
        ];
        if arch == "arm64" {
            want.extend(["sim/contpte_set_blocks", "sim/contpte_unfold"]);
        }
        for k in want {
            let n: i64 = match k.strip_prefix('*') {
                Some(suffix) => total
                    .iter()
                    .filter(|(name, _)| name.ends_with(suffix))
                    .map(|(_, v)| v)
                    .sum(),
                None => total.get(k).copied().unwrap_or(0),
            };
            assert!(n > 0, "{arch}: no {k} in 300 cases: {total:?}");
        }
    }
}

/// The generator itself is deterministic and produces parseable scenarios
/// with every kind of step (a sanity check on the test, not the model).
#[test]
fn generator_covers_every_step_kind() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let a = generate(seed, "x86_64", ALL);
        assert_eq!(a, generate(seed, "x86_64", ALL));
        foliosim_scenario::parse_str("gen.toml", &a, &[])
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{a}"));
        for op in [
            "mmap", "touch", "munmap", "madvise", "fork", "wait", "phase",
        ] {
            if a.contains(&format!("op = \"{op}\"")) {
                seen.insert(op.to_string());
            }
        }
        for k in [
            "kind = \"anon\"",
            "kind = \"file\"",
            "kind = \"shmem\"",
            "[[step.child]]",
            "[[step.child.child]]",
        ] {
            if a.contains(k) {
                seen.insert(k.to_string());
            }
        }
    }
    assert_eq!(seen.len(), 12, "{seen:?}");
}
