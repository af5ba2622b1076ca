//! Transparent huge page modes in sysfs spelling
//! (`/sys/kernel/mm/transparent_hugepage/`, mm/huge_memory.c:
//! enabled_store(), anon_enabled_store()).

/// `transparent_hugepage/enabled` (TRANSPARENT_HUGEPAGE_FLAG and
/// TRANSPARENT_HUGEPAGE_REQ_MADV_FLAG).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ThpMode {
    Always,
    Madvise,
    Never,
}

impl ThpMode {
    pub const ALL: [ThpMode; 3] = [ThpMode::Always, ThpMode::Madvise, ThpMode::Never];

    /// The word sysfs shows and accepts.
    pub fn as_str(self) -> &'static str {
        match self {
            ThpMode::Always => "always",
            ThpMode::Madvise => "madvise",
            ThpMode::Never => "never",
        }
    }

    pub fn from_name(s: &str) -> Option<ThpMode> {
        ThpMode::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// `transparent_hugepage/hugepages-<size>kB/enabled` for anonymous memory
/// (`huge_anon_orders_always`, `_madvise`, `_inherit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MthpMode {
    Always,
    Inherit,
    Madvise,
    Never,
}

impl MthpMode {
    pub const ALL: [MthpMode; 4] = [
        MthpMode::Always,
        MthpMode::Inherit,
        MthpMode::Madvise,
        MthpMode::Never,
    ];

    /// The word sysfs shows and accepts.
    pub fn as_str(self) -> &'static str {
        match self {
            MthpMode::Always => "always",
            MthpMode::Inherit => "inherit",
            MthpMode::Madvise => "madvise",
            MthpMode::Never => "never",
        }
    }

    pub fn from_name(s: &str) -> Option<MthpMode> {
        MthpMode::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// The sizes in KiB that have a `hugepages-<size>kB` directory with 4 KiB
/// base pages (orders 2 to PMD_ORDER: THP_ORDERS_ALL_ANON).
pub const MTHP_SIZES_KB: [u64; 8] = [16, 32, 64, 128, 256, 512, 1024, 2048];

/// The sysfs directory name of an mTHP size: `hugepages-64kB`.
pub fn mthp_dir(size_bytes: u64) -> String {
    format!("hugepages-{}kB", size_bytes / 1024)
}
