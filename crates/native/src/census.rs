//! `foliosim census --pid PID`: the folio sizes of a running process, per
//! kind of mapping, from `/proc/PID/maps`, `/proc/PID/pagemap` and
//! `/proc/kpageflags` (root), in the buckets of a scenario's folio
//! histogram (`4kB` ... `2048kB`, `zero`, `huge_zero`), so that a real
//! program can be set beside a replay or a model run, as thpmaps does.
//!
//! The contiguous bit of arm64's contpte mappings is not visible through
//! any of these files: a census cannot count contpte blocks (the model and
//! a guest's kprobes can).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;

use crate::histogram::{histogram, KpageFlags};
use crate::NativeError;

/// The kinds of mapping a census separates, in output order.
pub const KINDS: [&str; 4] = ["anon", "file", "shmem", "other"];

/// One mapping of `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Vma {
    start: u64,
    end: u64,
    kind: &'static str,
}

/// The kind of the mapping a `/proc/PID/maps` line describes, None for
/// the kernel's own ([vdso], [vvar], [vsyscall]: no struct page behind
/// them, or not the process's memory).
fn kind_of(path: &str, inode: &str) -> Option<&'static str> {
    match path {
        "" | "[heap]" | "[anon]" => Some("anon"),
        p if p.starts_with("[stack") || p.starts_with("[anon:") => Some("anon"),
        p if p.starts_with('[') => None,
        p if p.starts_with("/dev/shm/")
            || p.starts_with("/SYSV")
            || p.starts_with("/memfd:")
            || p.starts_with("/dev/zero") =>
        {
            Some("shmem")
        }
        _ if inode != "0" => Some("file"),
        _ => Some("other"),
    }
}

/// Parse `/proc/PID/maps`.
fn parse_maps(text: &str) -> Vec<Vma> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut f = line.splitn(6, ' ');
        let (Some(range), Some(_perms), Some(_off), Some(_dev), Some(inode)) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let path = f.next().unwrap_or("").trim();
        let Some((s, e)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (u64::from_str_radix(s, 16), u64::from_str_radix(e, 16)) else {
            continue;
        };
        if let Some(kind) = kind_of(path, inode) {
            out.push(Vma { start, end, kind });
        }
    }
    out
}

/// A census: per kind, the histogram (`<size>kB` folio counts, `zero`,
/// `huge_zero`) and page summary (`pages_present`, `pages_swapped`, ...)
/// summed over the kind's mappings, and the number of mappings.
#[derive(Debug, Default)]
pub struct Census {
    pub pid: i32,
    pub kinds: BTreeMap<&'static str, BTreeMap<String, u64>>,
}

/// Take a census of process `pid` (root: pagemap PFNs and kpageflags).
pub fn census(pid: i32) -> Result<Census, NativeError> {
    let refused = |what: String| NativeError::Refused(what);
    let maps = fs::read_to_string(format!("/proc/{pid}/maps")).map_err(|e| {
        refused(format!(
            "/proc/{pid}/maps: {e} (is {pid} a running process?)"
        ))
    })?;
    let mut flags = KpageFlags::open()
        .map_err(|e| refused(format!("/proc/kpageflags: {e} (a census needs root)")))?;
    let mut c = Census {
        pid,
        ..Census::default()
    };
    for vma in parse_maps(&maps) {
        let h = match histogram(pid, vma.start, vma.end - vma.start, &mut flags) {
            Ok(h) => h,
            // The process exited, or this mapping went away meanwhile.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => break,
            Err(e) => return Err(refused(format!("/proc/{pid}/pagemap: {e}"))),
        };
        let kind = c.kinds.entry(vma.kind).or_default();
        *kind.entry("vmas".into()).or_insert(0) += 1;
        for (k, v) in h {
            *kind.entry(k).or_insert(0) += v;
        }
    }
    if c.kinds
        .values()
        .all(|k| k.get("pages_present").copied().unwrap_or(0) == 0)
    {
        return Err(refused(format!(
            "no page of {pid} is present with a frame number: a census needs root \
             (pagemap hides PFNs from others)"
        )));
    }
    Ok(c)
}

/// The folio-size buckets of a kind's histogram, smallest first, with the
/// pages each holds.
fn sizes(h: &BTreeMap<String, u64>) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = h
        .iter()
        .filter_map(|(k, &n)| Some((k.strip_suffix("kB")?.parse().ok()?, n)))
        .collect();
    v.sort();
    v
}

impl Census {
    /// The table: per kind, folios, pages and the share of the kind's
    /// present pages in each folio size, then zero pages and swap entries.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "census of process {}", self.pid);
        for kind in KINDS {
            let Some(h) = self.kinds.get(kind) else {
                continue;
            };
            let get = |k: &str| h.get(k).copied().unwrap_or(0);
            let present = get("pages_present");
            let _ = writeln!(
                out,
                "\n{kind}: {} mappings, {present} pages present, {} swapped",
                get("vmas"),
                get("pages_swapped")
            );
            let _ = writeln!(
                out,
                "  {:>8}  {:>10}  {:>10}  {:>7}",
                "size", "folios", "pages", "share"
            );
            for (kb, folios) in sizes(h) {
                let pages = folios * kb / 4;
                let share = 100.0 * pages as f64 / present.max(1) as f64;
                let _ = writeln!(
                    out,
                    "  {:>8}  {folios:>10}  {pages:>10}  {share:>6.1}%",
                    format!("{kb}kB")
                );
            }
            for (k, what) in [("zero", "zero page"), ("huge_zero", "huge zero page")] {
                if get(k) > 0 {
                    let _ = writeln!(out, "  {what}: {}", get(k));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_are_sorted_into_kinds() {
        let text = "\
55d0c0a00000-55d0c0a21000 r--p 00000000 fe:00 1054 /usr/bin/python3.11
55d0c1200000-55d0c1400000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0004000000 rw-p 00000000 00:00 0 
7f1000000000-7f1000100000 rw-s 00000000 00:01 77 /dev/shm/x
7f1100000000-7f1100001000 rw-s 00000000 00:01 9 /memfd:buf (deleted)
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
7ffd00100000-7ffd00102000 r--p 00000000 00:00 0 [vvar]
7ffd00102000-7ffd00104000 r-xp 00000000 00:00 0 [vdso]
";
        let kinds: Vec<&str> = parse_maps(text).iter().map(|v| v.kind).collect();
        assert_eq!(kinds, ["file", "anon", "anon", "shmem", "shmem", "anon"]);
        let v = parse_maps(text);
        assert_eq!((v[2].start, v[2].end), (0x7f00_0000_0000, 0x7f00_0400_0000));
    }

    #[test]
    fn shares_are_of_the_kinds_present_pages() {
        let mut h = BTreeMap::new();
        h.insert("pages_present".to_string(), 48);
        h.insert("4kB".to_string(), 16);
        h.insert("64kB".to_string(), 2);
        h.insert("vmas".to_string(), 1);
        let c = Census {
            pid: 7,
            kinds: [("anon", h)].into_iter().collect(),
        };
        let t = c.text();
        // 16 pages in 4 KiB folios and 32 in two 64 KiB folios, of 48.
        assert!(
            t.contains("     4kB          16          16    33.3%"),
            "{t}"
        );
        assert!(
            t.contains("    64kB           2          32    66.7%"),
            "{t}"
        );
    }
}
