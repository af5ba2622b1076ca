//! The patch series modelled as switches, under `series.` in a scenario's
//! `[system]` table. One table ([`SWITCHES`]) gives each switch's name,
//! documentation and default; the scenario parser, the kernel model, the
//! engines and the docs all read it.

/// The switches' values (all off: vanilla Linux 6.18).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Series {
    /// Seed 000: batched unmap of anonymous swap-backed large folios into
    /// swap entries in try_to_unmap_one().
    pub batch_anon_unmap: bool,
    /// Seed 002 patches 1-4: batched young-bit checks in
    /// folio_referenced_one() (arm64 contpte batch young clearing).
    pub batch_folio_referenced: bool,
    /// Seed 002 patch 5: batched unmap of file large folios in
    /// try_to_unmap_one().
    pub batch_file_unmap: bool,
    /// Seed 004: pagemap reports the swap location of swapped-out shmem
    /// pages, found in the mapping's page cache.
    pub pagemap_shmem_swap: bool,
    /// Linux 7.x: reclaim's pgscan/pgsteal/pgrefill events are per-lruvec
    /// statistics, so /proc/vmstat counts cgroup reclaim too.
    pub reclaim_stats_per_lruvec: bool,
    /// Linux 7.x: MGLRU's should_abort_scan() ends memory-cgroup reclaim
    /// too once it has reclaimed its target.
    pub mglru_memcg_abort: bool,
    /// pagemap_read() as before Linux 6.5: every read(2) walks to the end
    /// of its 2 MiB chunk and copies only what was asked for.
    pub pagemap_walk_to_pmd_end: bool,
}

/// One switch: its key (without `series.`), what it models, its default,
/// and its field in [`Series`].
#[derive(Clone, Copy, Debug)]
pub struct Switch {
    pub name: &'static str,
    pub doc: &'static str,
    pub default: bool,
    /// The first mainline release that contains the change (None: not
    /// merged, or a behaviour mainline has left).
    pub merged_in: Option<&'static str>,
    field: fn(&mut Series) -> &mut bool,
}

/// Every switch, in documentation order.
pub const SWITCHES: &[Switch] = &[
    Switch {
        name: "batch_anon_unmap",
        doc: "batched unmapping of anonymous swap-backed large folios into swap entries \
              in try_to_unmap_one() (seed 000)",
        default: false,
        merged_in: None,
        field: |s| &mut s.batch_anon_unmap,
    },
    Switch {
        name: "batch_folio_referenced",
        doc: "batched young-bit checks in folio_referenced_one(), arm64 contpte batch \
              young clearing (seed 002 patches 1-4)",
        default: false,
        merged_in: Some("7.0"),
        field: |s| &mut s.batch_folio_referenced,
    },
    Switch {
        name: "batch_file_unmap",
        doc: "batched unmapping of file large folios in try_to_unmap_one() (seed 002 \
              patch 5)",
        default: false,
        merged_in: Some("7.0"),
        field: |s| &mut s.batch_file_unmap,
    },
    Switch {
        name: "pagemap_shmem_swap",
        doc: "pagemap reports the swap type and offset of swapped-out shared (shmem) \
              pages (seed 004)",
        default: false,
        merged_in: None,
        field: |s| &mut s.pagemap_shmem_swap,
    },
    Switch {
        name: "reclaim_stats_per_lruvec",
        doc: "reclaim's pgscan_*, pgsteal_* and pgrefill are per-lruvec statistics \
              (mod_lruvec_state() in shrink_inactive_list() and shrink_active_list()), \
              so /proc/vmstat counts memory-cgroup reclaim too; 6.18 counts the \
              global events only for reclaim outside a cgroup (seen in Linux 7.1.5)",
        default: false,
        merged_in: Some("7.1"),
        field: |s| &mut s.reclaim_stats_per_lruvec,
    },
    Switch {
        name: "mglru_memcg_abort",
        doc: "the multi-gen LRU's should_abort_scan() stops memory-cgroup reclaim as it \
              stops global reclaim, once it has reclaimed its target; 6.18 never aborts it \
              ('don't abort memcg reclaim to ensure fairness') and so reclaims a little \
              more per call (seen in Linux 7.1.5)",
        default: false,
        merged_in: Some("7.1"),
        field: |s| &mut s.mglru_memcg_abort,
    },
    Switch {
        name: "pagemap_walk_to_pmd_end",
        doc: "pagemap_read() as before Linux 6.5: each read(2) walks to the end of its \
              2 MiB chunk whatever the count (6.5: 'mm: pagemap: restrict pagewalk to the \
              requested range')",
        default: false,
        merged_in: None,
        field: |s| &mut s.pagemap_walk_to_pmd_end,
    },
];

impl Switch {
    /// Whether a kernel of `release` (`uname -r`, like "7.1.5" or
    /// "6.18.35-foo") contains the change: its major.minor is at least
    /// `merged_in`'s. An unparsable release contains nothing.
    pub fn merged_by(&self, release: &str) -> bool {
        match (self.merged_in.and_then(major_minor), major_minor(release)) {
            (Some(m), Some(r)) => r >= m,
            _ => false,
        }
    }
}

/// (major, minor) of a kernel release string.
fn major_minor(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

impl Series {
    /// The value of switch `name` (without `series.`).
    pub fn get(&self, name: &str) -> Option<bool> {
        let mut copy = *self;
        SWITCHES
            .iter()
            .find(|s| s.name == name)
            .map(|s| *(s.field)(&mut copy))
    }

    /// Set switch `name`; false if there is no such switch.
    pub fn set(&mut self, name: &str, on: bool) -> bool {
        match SWITCHES.iter().find(|s| s.name == name) {
            Some(s) => {
                *(s.field)(self) = on;
                true
            }
            None => false,
        }
    }

    /// Every switch with its value, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static Switch, bool)> + '_ {
        SWITCHES
            .iter()
            .map(move |s| (s, self.get(s.name).unwrap_or(s.default)))
    }

    /// The switches that are on.
    pub fn on(&self) -> impl Iterator<Item = &'static Switch> + '_ {
        self.iter().filter(|(_, on)| *on).map(|(s, _)| s)
    }

    /// Every switch at its default.
    pub fn defaults() -> Series {
        let mut s = Series::default();
        for sw in SWITCHES {
            *(sw.field)(&mut s) = sw.default;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_switch_has_its_own_field() {
        for (i, sw) in SWITCHES.iter().enumerate() {
            let mut s = Series::default();
            assert!(s.set(sw.name, true));
            let on: Vec<&str> = s.on().map(|s| s.name).collect();
            assert_eq!(on, [sw.name], "switch {i}");
            assert_eq!(s.get(sw.name), Some(true));
        }
        assert!(!Series::default().set("no_such_switch", true));
        assert_eq!(Series::defaults(), Series::default());
    }

    #[test]
    fn merged_by_compares_major_and_minor() {
        let sw = SWITCHES
            .iter()
            .find(|s| s.name == "batch_file_unmap")
            .unwrap();
        // Seed 002 went into 7.0.
        assert!(!sw.merged_by("6.18.35"));
        assert!(!sw.merged_by("6.19.0-rc1"));
        assert!(sw.merged_by("7.0.0"));
        assert!(sw.merged_by("7.1.5"));
        assert!(sw.merged_by("10.2"));
        assert!(!sw.merged_by("garbage"));
        let never = SWITCHES.iter().find(|s| s.merged_in.is_none()).unwrap();
        assert!(!never.merged_by("99.0"));
    }
}

#[cfg(test)]
mod docs {
    /// The scenario language reference documents every switch of the table.
    #[test]
    fn every_switch_is_in_the_scenario_reference() {
        let doc = include_str!("../../../docs/scenarios.md");
        for sw in super::SWITCHES {
            let key = format!("`series.{}`", sw.name);
            assert!(doc.contains(&key), "docs/scenarios.md lacks {key}");
        }
    }
}
