//! The `[system]` knobs of a scenario and the page size. One table
//! ([`KNOBS`]) gives each knob's scenario key, type and range, default, the
//! host file that holds it and a line of documentation; the scenario
//! parser, the kernel model's configuration, the native engine's writes and
//! restores of host knobs, `foliosim probe` and the docs all read it. The
//! patch-series switches (`series.<name>`) have their own table,
//! [`crate::series::SWITCHES`]; [`lookup`] finds a key in either.

use crate::series::{Switch, SWITCHES};
use crate::thp::{MthpMode, ThpMode, MTHP_SIZES_KB};
use crate::Arch;

/// log2 of the base page size (`PAGE_SHIFT`): 4 KiB pages on x86_64 and on
/// arm64 with the 4 KiB granule, the only configurations modelled.
pub const PAGE_SHIFT: u32 = 12;
/// The base page size in bytes (`PAGE_SIZE`).
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;

const MIB: u64 = 1 << 20;

/// What values a knob takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An architecture name ([`Arch::from_name`]).
    Arch,
    /// A size in bytes: a multiple of `align`, at least `min`.
    Bytes { align: u64, min: u64 },
    /// An integer from `min` to `max`; `what` names it in messages
    /// ("expected {what} from {min} to {max}").
    Int {
        min: u64,
        max: u64,
        what: &'static str,
    },
    /// A flag: 0 or 1 (also false or true).
    Flag,
    /// A `transparent_hugepage/enabled` word ([`ThpMode`]).
    Thp,
    /// A `hugepages-<N>kB/enabled` word ([`MthpMode`]), one knob per size
    /// of [`MTHP_SIZES_KB`]; the key holds `<N>`.
    Mthp,
    /// Free blocks per order, 0 to 10 ([`FreeCounts`]).
    FreeCounts,
}

/// The number of buddy orders (`NR_PAGE_ORDERS`: 0 to `MAX_PAGE_ORDER`,
/// 10, on x86_64 and on arm64 with 4 KiB pages).
pub const NR_PAGE_ORDERS: usize = 11;

/// Free blocks of each order, 0 to 10, as a row of /proc/pagetypeinfo's
/// "Free pages count per migrate type at order" shows them: spelled as
/// eleven counts separated by spaces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FreeCounts(pub [u32; NR_PAGE_ORDERS]);

impl FreeCounts {
    /// Parse up to eleven counts separated by spaces or commas (orders
    /// left out have none); None if a count is not a number or there are
    /// more than eleven.
    pub fn parse(text: &str) -> Option<FreeCounts> {
        let mut out = [0u32; NR_PAGE_ORDERS];
        let words = text.split([' ', ',']).filter(|w| !w.is_empty());
        for (i, w) in words.enumerate() {
            *out.get_mut(i)? = w.parse().ok()?;
        }
        Some(FreeCounts(out))
    }

    /// The free pages these blocks hold.
    pub fn pages(&self) -> u64 {
        self.0
            .iter()
            .enumerate()
            .map(|(o, &n)| u64::from(n) << o)
            .sum()
    }
}

impl std::fmt::Display for FreeCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words: Vec<String> = self.0.iter().map(u32::to_string).collect();
        f.write_str(&words.join(" "))
    }
}

/// A knob's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Arch(Arch),
    Int(u64),
    Flag(bool),
    Thp(ThpMode),
    Mthp(MthpMode),
    FreeCounts(FreeCounts),
}

/// `Value::$name()`: the inner value of a `$variant`; a knob of another
/// kind is a mistake of the caller (const: found at compile time when the
/// table's defaults are read in a const context).
macro_rules! accessors {
    ($($(#[$doc:meta])* $name:ident -> $t:ty = $variant:ident, $kind:literal;)*) => {
        impl Value {
            $(
                $(#[$doc])*
                pub const fn $name(self) -> $t {
                    match self {
                        Value::$variant(v) => v,
                        _ => panic!(concat!("not ", $kind)),
                    }
                }
            )*
        }
    };
}

accessors! {
    /// The integer of a size or count knob.
    int -> u64 = Int, "an integer knob";
    flag -> bool = Flag, "a flag knob";
    thp -> ThpMode = Thp, "a transparent_hugepage/enabled knob";
    mthp -> MthpMode = Mthp, "a per-size mTHP knob";
    arch -> Arch = Arch, "the arch knob";
    free_counts -> FreeCounts = FreeCounts, "a free-blocks knob";
}

impl std::fmt::Display for Value {
    /// The kernel's spelling, as a scenario's `knobs` map holds it: words,
    /// decimal integers, `1` / `0` for flags.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Arch(a) => f.write_str(a.as_str()),
            Value::Int(n) => write!(f, "{n}"),
            Value::Flag(b) => f.write_str(if *b { "1" } else { "0" }),
            Value::Thp(m) => f.write_str(m.as_str()),
            Value::Mthp(m) => f.write_str(m.as_str()),
            Value::FreeCounts(c) => c.fmt(f),
        }
    }
}

/// The file of the host kernel that holds a knob, and what the native
/// engine does with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Host {
    /// The file; `<N>` stands for the size in KiB of a per-size knob,
    /// `<dev>` for the block device holding the scenario's files.
    pub path: &'static str,
    /// How the file spells a flag's values (false, true).
    pub flag_words: (&'static str, &'static str),
    pub access: Access,
}

/// What the native engine does with a host knob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Written before each run (defaults included, so that a host changed
    /// by hand does not leak into the result) and put back afterwards.
    /// A kernel without the file: a `required` file refuses every run,
    /// another runs only the default. `lacks` says what such a kernel lacks.
    Set {
        required: bool,
        lacks: Option<&'static str>,
    },
    /// A debugfs file: the host's cannot be read or written (EPERM under
    /// lockdown), so natively only the default runs; a guest's is written
    /// when the scenario asks for another value.
    Debugfs,
    /// A file of the device holding the scenario's files: natively checked
    /// (never changed), written in a guest.
    Device,
    /// A file the native engine never writes, because changing it would
    /// change the host for good (`why` says how): natively only the default
    /// runs; a guest's is written when the scenario asks for another value.
    GuestOnly { why: &'static str },
}

/// One `[system]` knob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Knob {
    /// The key under `[system]` (and for `--set`); a per-size knob's key
    /// holds `<N>` where the size in KiB goes.
    pub key: &'static str,
    pub kind: Kind,
    /// The default; a per-size mTHP knob's default for sizes other than
    /// the PMD size (see [`mthp_default`]).
    pub default: Value,
    /// The host file (None: a property of the simulated machine).
    pub host: Option<Host>,
    pub doc: &'static str,
}

const DIGITS: (&str, &str) = ("0", "1");
const NO_THP: Access = Access::Set {
    required: true,
    lacks: Some("transparent hugepage support"),
};

pub const ARCH: Knob = Knob {
    key: "arch",
    kind: Kind::Arch,
    default: Value::Arch(Arch::X86_64),
    host: None,
    doc: "the architecture modelled (arm64 with the 4 KiB granule)",
};

pub const MEMORY: Knob = Knob {
    key: "memory",
    kind: Kind::Bytes {
        align: 4 * MIB,
        min: 64 * MIB,
    },
    default: Value::Int(24 << 30),
    host: None,
    doc: "simulated RAM",
};

pub const CPUS: Knob = Knob {
    key: "cpus",
    kind: Kind::Int {
        min: 1,
        max: crate::MAX_CPUS as u64,
        what: "a number of CPUs",
    },
    default: Value::Int(2),
    host: None,
    doc: "simulated CPUs; a threads step needs count + 1 of them",
};

pub const THP_ENABLED: Knob = Knob {
    key: "transparent_hugepage.enabled",
    kind: Kind::Thp,
    default: Value::Thp(ThpMode::Madvise),
    host: Some(Host {
        path: "/sys/kernel/mm/transparent_hugepage/enabled",
        flag_words: DIGITS,
        access: NO_THP,
    }),
    doc: "whether anonymous faults allocate PMD THPs (the Kconfig default is madvise)",
};

pub const THP_USE_ZERO_PAGE: Knob = Knob {
    key: "transparent_hugepage.use_zero_page",
    kind: Kind::Flag,
    default: Value::Flag(true),
    host: Some(Host {
        path: "/sys/kernel/mm/transparent_hugepage/use_zero_page",
        flag_words: DIGITS,
        access: NO_THP,
    }),
    doc: "read faults in a THP-enabled range map the huge zero folio",
};

pub const THP_SHRINK_UNDERUSED: Knob = Knob {
    key: "transparent_hugepage.shrink_underused",
    kind: Kind::Flag,
    default: Value::Flag(true),
    host: Some(Host {
        path: "/sys/kernel/mm/transparent_hugepage/shrink_underused",
        flag_words: DIGITS,
        access: Access::Set {
            required: false,
            lacks: None,
        },
    }),
    doc: "PMD THPs are queued at fault for the deferred-split shrinker, which splits \
          underused ones",
};

pub const KHUGEPAGED_MAX_PTES_NONE: Knob = Knob {
    key: "transparent_hugepage.khugepaged.max_ptes_none",
    kind: Kind::Int {
        min: 0,
        max: 511,
        what: "a number of PTEs",
    },
    default: Value::Int(511),
    host: Some(Host {
        path: "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none",
        flag_words: DIGITS,
        access: Access::Set {
            required: false,
            lacks: None,
        },
    }),
    doc: "khugepaged collapses a PMD range with at most this many none or zero-page PTEs; \
          a queued THP with more zero-filled pages is underused (thp_underused(); never \
          at 511)",
};

/// A knob of khugepaged's sysfs directory, written like the others.
const fn khugepaged(
    key: &'static str,
    path: &'static str,
    max: u64,
    default: u64,
    what: &'static str,
    doc: &'static str,
) -> Knob {
    Knob {
        key,
        kind: Kind::Int { min: 0, max, what },
        default: Value::Int(default),
        host: Some(Host {
            path,
            flag_words: DIGITS,
            access: Access::Set {
                required: false,
                lacks: None,
            },
        }),
        doc,
    }
}

pub const KHUGEPAGED_MAX_PTES_SWAP: Knob = khugepaged(
    "transparent_hugepage.khugepaged.max_ptes_swap",
    "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_swap",
    511,
    64,
    "a number of PTEs",
    "khugepaged collapses a PMD range with at most this many swap PTEs (swapped in \
     first); MADV_COLLAPSE ignores it",
);

pub const KHUGEPAGED_MAX_PTES_SHARED: Knob = khugepaged(
    "transparent_hugepage.khugepaged.max_ptes_shared",
    "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_shared",
    511,
    256,
    "a number of PTEs",
    "khugepaged collapses a PMD range with at most this many PTEs of folios maybe \
     mapped by another process; MADV_COLLAPSE ignores it",
);

pub const KHUGEPAGED_PAGES_TO_SCAN: Knob = Knob {
    kind: Kind::Int {
        min: 1,
        max: u32::MAX as u64,
        what: "a number of pages",
    },
    ..khugepaged(
        "transparent_hugepage.khugepaged.pages_to_scan",
        "/sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan",
        0,
        4096,
        "",
        "the pages (PMD ranges count 512, other VMAs 1) one khugepaged pass scans \
         before it sleeps",
    )
};

pub const KHUGEPAGED_SCAN_SLEEP_MILLISECS: Knob = khugepaged(
    "transparent_hugepage.khugepaged.scan_sleep_millisecs",
    "/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs",
    u32::MAX as u64,
    10000,
    "milliseconds",
    "the host's khugepaged sleeps this long between passes; the model's khugepaged runs \
     only at khugepaged steps, so set it high for a native run to match",
);

pub const MTHP_ENABLED: Knob = Knob {
    key: "transparent_hugepage.hugepages-<N>kB.enabled",
    kind: Kind::Mthp,
    default: Value::Mthp(MthpMode::Never),
    host: Some(Host {
        path: "/sys/kernel/mm/transparent_hugepage/hugepages-<N>kB/enabled",
        flag_words: DIGITS,
        access: Access::Set {
            required: false,
            lacks: Some("multi-size THP of that size"),
        },
    }),
    doc: "whether anonymous faults allocate folios of N KiB (inherit: as \
          transparent_hugepage.enabled)",
};

pub const FAULT_AROUND_BYTES: Knob = Knob {
    key: "fault_around_bytes",
    kind: Kind::Bytes { align: 1, min: 1 },
    default: Value::Int(65536),
    host: Some(Host {
        path: "/sys/kernel/debug/fault_around_bytes",
        flag_words: DIGITS,
        access: Access::Debugfs,
    }),
    doc: "the file fault-around window as written; the kernel rounds it down to a power \
          of two pages",
};

pub const READ_AHEAD_KB: Knob = Knob {
    key: "read_ahead_kb",
    kind: Kind::Int {
        min: 0,
        max: u64::MAX,
        what: "a readahead size in KiB",
    },
    default: Value::Int(128),
    host: Some(Host {
        path: "/sys/block/<dev>/queue/read_ahead_kb",
        flag_words: DIGITS,
        access: Access::Device,
    }),
    doc: "the readahead window of the device that holds the files",
};

pub const MAX_SECTORS_KB: Knob = Knob {
    key: "max_sectors_kb",
    kind: Kind::Int {
        min: 4,
        max: u64::MAX,
        what: "a request size in KiB",
    },
    // block/blk-settings.c: blk_validate_limits() caps a driver's
    // max_hw_sectors at BLK_DEF_MAX_SECTORS_CAP (4 MiB) by default.
    default: Value::Int(4096),
    host: Some(Host {
        path: "/sys/block/<dev>/queue/max_sectors_kb",
        flag_words: DIGITS,
        access: Access::Device,
    }),
    doc: "the largest request of the device that holds the files, which sets its bdi's \
          io_pages: how far MADV_WILLNEED of a file mapping, or a read(2) larger than the \
          readahead window, reads ahead",
};

pub const PAGE_CLUSTER: Knob = Knob {
    key: "vm.page_cluster",
    kind: Kind::Int {
        min: 0,
        max: 31,
        what: "a page-cluster",
    },
    default: Value::Int(3),
    host: Some(Host {
        path: "/proc/sys/vm/page-cluster",
        flag_words: DIGITS,
        access: Access::Set {
            required: false,
            lacks: Some("swap support"),
        },
    }),
    doc: "swap readahead reads windows of up to 2^page_cluster pages; 0 turns it off",
};

pub const VMA_RA_ENABLED: Knob = Knob {
    key: "vma_ra_enabled",
    kind: Kind::Flag,
    default: Value::Flag(true),
    host: Some(Host {
        path: "/sys/kernel/mm/swap/vma_ra_enabled",
        flag_words: ("false", "true"),
        access: Access::Set {
            required: false,
            lacks: Some("swap support"),
        },
    }),
    doc: "swap readahead by virtual address around the fault while no swap area is \
          rotational, else by swap offset",
};

pub const LRU_GEN_ENABLED: Knob = Knob {
    key: "lru_gen.enabled",
    kind: Kind::Flag,
    default: Value::Flag(false),
    host: Some(Host {
        path: "/sys/kernel/mm/lru_gen/enabled",
        flag_words: ("n", "y"),
        access: Access::Set {
            required: false,
            lacks: Some("multi-gen LRU (CONFIG_LRU_GEN)"),
        },
    }),
    doc: "the multi-gen LRU (MGLRU) with every capability (`y`: page-table walks, non-leaf \
          PMD accessed bits) instead of the two-list active/inactive LRU",
};

pub const LRU_GEN_MIN_TTL_MS: Knob = Knob {
    key: "lru_gen.min_ttl_ms",
    kind: Kind::Int {
        min: 0,
        max: u32::MAX as u64,
        what: "a time in milliseconds",
    },
    default: Value::Int(0),
    host: Some(Host {
        path: "/sys/kernel/mm/lru_gen/min_ttl_ms",
        flag_words: DIGITS,
        access: Access::Set {
            required: false,
            lacks: Some("multi-gen LRU (CONFIG_LRU_GEN)"),
        },
    }),
    doc: "MGLRU's thrashing prevention: kswapd has the OOM killer kill a process when the \
          oldest generation of every cgroup is younger than this (0: off)",
};

/// zswap's module parameters, as the scenario and the kernel model hold
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zswap {
    pub enabled: bool,
    pub max_pool_percent: u32,
    pub accept_threshold_percent: u32,
    pub shrinker_enabled: bool,
}

impl Default for Zswap {
    /// The knob table's defaults.
    fn default() -> Self {
        Zswap {
            enabled: ZSWAP_ENABLED.default.flag(),
            max_pool_percent: ZSWAP_MAX_POOL_PERCENT.default.int() as u32,
            accept_threshold_percent: ZSWAP_ACCEPT_THRESHOLD_PERCENT.default.int() as u32,
            shrinker_enabled: ZSWAP_SHRINKER_ENABLED.default.flag(),
        }
    }
}

impl Zswap {
    /// The field of a zswap knob.
    pub fn knob_mut(&mut self, knob: &Knob) -> Option<FieldMut<'_>> {
        Some(match *knob {
            ZSWAP_ENABLED => FieldMut::Flag(&mut self.enabled),
            ZSWAP_MAX_POOL_PERCENT => FieldMut::U32(&mut self.max_pool_percent),
            ZSWAP_ACCEPT_THRESHOLD_PERCENT => FieldMut::U32(&mut self.accept_threshold_percent),
            ZSWAP_SHRINKER_ENABLED => FieldMut::Flag(&mut self.shrinker_enabled),
            _ => return None,
        })
    }
}

/// Why the zswap knobs run only in guests.
const ZSWAP_GUEST_ONLY: Access = Access::GuestOnly {
    why: "enabling zswap once sets zswap_ever_enabled until reboot, and from then on \
          the kernel swaps large folios in page by page (alloc_swap_folio()), which \
          would change every later native run on this host; run it with `--engine vm`",
};

/// A zswap module parameter (`/sys/module/zswap/parameters/<name>`).
const fn zswap(
    key: &'static str,
    name: &'static str,
    kind: Kind,
    default: Value,
    doc: &'static str,
) -> Knob {
    Knob {
        key,
        kind,
        default,
        host: Some(Host {
            path: name,
            flag_words: ("N", "Y"),
            access: ZSWAP_GUEST_ONLY,
        }),
        doc,
    }
}

pub const ZSWAP_MAX_POOL_PERCENT: Knob = zswap(
    "zswap.max_pool_percent",
    "/sys/module/zswap/parameters/max_pool_percent",
    Kind::Int {
        min: 0,
        max: 100,
        what: "a percentage",
    },
    Value::Int(20),
    "the compressed pool may hold this share of RAM (zswap_max_pages()); a store that \
     finds it full is rejected and the shrink worker writes entries back",
);

pub const ZSWAP_ACCEPT_THRESHOLD_PERCENT: Knob = zswap(
    "zswap.accept_threshold_percent",
    "/sys/module/zswap/parameters/accept_threshold_percent",
    Kind::Int {
        min: 0,
        max: 100,
        what: "a percentage",
    },
    Value::Int(90),
    "after the pool was full, stores resume below this share of the maximum",
);

pub const ZSWAP_SHRINKER_ENABLED: Knob = zswap(
    "zswap.shrinker_enabled",
    "/sys/module/zswap/parameters/shrinker_enabled",
    Kind::Flag,
    Value::Flag(false),
    "the memory-pressure shrinker: reclaim's shrink_slab() writes a cgroup's zswap entries \
     back, scaled by their compression ratio (zswap_shrinker_count(), zswap_shrinker_scan())",
);

pub const ZSWAP_ENABLED: Knob = zswap(
    "zswap.enabled",
    "/sys/module/zswap/parameters/enabled",
    Kind::Flag,
    Value::Flag(false),
    "zswap, the compressed cache in front of the swap devices (lzo, zsmalloc); guests \
     only",
);

/// Memory of the machine the page allocator never manages. With the next
/// two, the model's machine can be a measured one: `compare --engine vm`
/// sets them to the guest's (the kernel's own memory before the workload).
pub const MACHINE_UNMANAGED: Knob = Knob {
    key: "machine.unmanaged",
    kind: Kind::Bytes {
        align: PAGE_SIZE,
        min: 0,
    },
    default: Value::Int(0),
    host: None,
    doc: "memory the page allocator never manages (kernel image, struct pages, \
          firmware); a VM comparison sets the guest's",
};

pub const MACHINE_BOOT_USED: Knob = Knob {
    key: "machine.boot_used",
    kind: Kind::Bytes {
        align: PAGE_SIZE,
        min: 0,
    },
    default: Value::Int(0),
    host: None,
    doc: "managed memory in use before the workload starts (the kernel's slab, \
          page tables, initramfs); a VM comparison sets the guest's",
};

pub const MACHINE_PCP_LIST: Knob = Knob {
    key: "machine.pcp_list",
    kind: Kind::Bytes {
        align: PAGE_SIZE,
        min: 0,
    },
    default: Value::Int(0),
    host: None,
    doc: "of machine.boot_used, the pages on the workload CPU's per-CPU page list \
          before the workload starts, which its first allocations take; a VM \
          comparison sets the guest's",
};

pub const MACHINE_KSWAPD_PCP_LIST: Knob = Knob {
    key: "machine.kswapd_pcp_list",
    kind: Kind::Bytes {
        align: PAGE_SIZE,
        min: 0,
    },
    default: Value::Int(0),
    host: None,
    doc: "of machine.boot_used, the pages on the per-CPU page list of the CPU kswapd \
          runs on (the next CPU after the workload's) before the workload starts, which \
          kswapd's own allocations (zram's pool) take first; a VM comparison sets the \
          guest's",
};

/// A count of pages, as the per-CPU lists' `pcp->high` knobs take.
const PAGE_COUNT: Kind = Kind::Int {
    min: 0,
    max: 1 << 30,
    what: "a page count",
};

pub const MACHINE_PCP_HIGH: Knob = Knob {
    key: "machine.pcp_high",
    kind: PAGE_COUNT,
    default: Value::Int(0),
    host: None,
    doc: "pcp->high of the workload CPU's per-CPU page list when the workload starts, in \
          pages (the largest over the zones of /proc/zoneinfo); 0: unknown, and the list's \
          first use sets it to the lowest it may be (high_min); a VM comparison sets the \
          guest's",
};

pub const MACHINE_KSWAPD_PCP_HIGH: Knob = Knob {
    key: "machine.kswapd_pcp_high",
    kind: PAGE_COUNT,
    default: Value::Int(0),
    host: None,
    doc: "pcp->high of the per-CPU page list of the CPU kswapd runs on when the workload \
          starts, in pages, as machine.pcp_high is the workload CPU's; a VM comparison \
          sets the guest's",
};

pub const MACHINE_LOWMEM_RESERVE: Knob = Knob {
    key: "machine.lowmem_reserve",
    kind: Kind::Bytes {
        align: PAGE_SIZE,
        min: 0,
    },
    default: Value::Int(0),
    host: None,
    doc: "free memory of the zones below the workload's that its allocations may not \
          take (each lower zone's lowmem_reserve protection plus its low watermark); \
          the one-zone model holds it back; a VM comparison sets the guest's",
};

pub const MACHINE_MIN_FREE_KBYTES: Knob = Knob {
    key: "machine.min_free_kbytes",
    kind: Kind::Int {
        min: 0,
        max: 1 << 30,
        what: "a min_free_kbytes",
    },
    default: Value::Int(0),
    host: None,
    doc: "vm.min_free_kbytes, which sets the zone watermarks; 0: computed from the \
          managed memory as the kernel does at boot; a VM comparison sets the guest's",
};

pub const MACHINE_UNMOVABLE_BLOCKS: Knob = Knob {
    key: "machine.unmovable_blocks",
    kind: Kind::Int {
        min: 0,
        max: 1 << 31,
        what: "a number of pageblocks",
    },
    default: Value::Int(0),
    host: None,
    doc: "pageblocks (2 MiB) of migratetype Unmovable before the workload starts, \
          at the start of machine.boot_used; the rest of memory is Movable; a VM \
          comparison sets the guest's (/proc/pagetypeinfo)",
};

pub const MACHINE_RECLAIMABLE_BLOCKS: Knob = Knob {
    key: "machine.reclaimable_blocks",
    kind: Kind::Int {
        min: 0,
        max: 1 << 31,
        what: "a number of pageblocks",
    },
    default: Value::Int(0),
    host: None,
    doc: "pageblocks of migratetype Reclaimable before the workload starts, after \
          the Unmovable ones; a VM comparison sets the guest's (/proc/pagetypeinfo)",
};

pub const MACHINE_CMA_BLOCKS: Knob = Knob {
    key: "machine.cma_blocks",
    kind: Kind::Int {
        min: 0,
        max: 1 << 31,
        what: "a number of pageblocks",
    },
    default: Value::Int(0),
    host: None,
    doc: "pageblocks of migratetype CMA (the contiguous memory allocator's area; \
          32 MiB in arm64's defconfig), at the top of memory and free when the workload \
          starts; a VM comparison sets the guest's (/proc/pagetypeinfo)",
};

pub const MACHINE_FREE_UNMOVABLE: Knob = Knob {
    key: "machine.free_unmovable",
    kind: Kind::FreeCounts,
    default: Value::FreeCounts(FreeCounts([0; NR_PAGE_ORDERS])),
    host: None,
    doc: "free blocks of each order, 0 to 10, in the Unmovable pageblocks before \
          the workload starts (free memory besides machine.boot_used), which movable \
          allocations take only when their own lists are empty; a VM comparison sets \
          the guest's (/proc/pagetypeinfo)",
};

pub const MACHINE_FREE_RECLAIMABLE: Knob = Knob {
    key: "machine.free_reclaimable",
    kind: Kind::FreeCounts,
    default: Value::FreeCounts(FreeCounts([0; NR_PAGE_ORDERS])),
    host: None,
    doc: "free blocks of each order, 0 to 10, in the Reclaimable pageblocks before \
          the workload starts; a VM comparison sets the guest's (/proc/pagetypeinfo)",
};

pub const WATERMARK_BOOST_FACTOR: Knob = Knob {
    key: "vm.watermark_boost_factor",
    kind: Kind::Int {
        min: 0,
        max: 1 << 31,
        what: "a watermark_boost_factor",
    },
    default: Value::Int(15_000),
    host: Some(Host {
        path: "/proc/sys/vm/watermark_boost_factor",
        flag_words: DIGITS,
        access: Access::Set {
            required: false,
            lacks: None,
        },
    }),
    doc: "how far a movable allocation that takes a free block of another \
          migratetype raises the watermarks, in 1/10,000 of the high watermark \
          (the boost grows by a pageblock per fallback up to this); 0 turns \
          boosting off",
};

pub const SWAPPINESS: Knob = Knob {
    key: "vm.swappiness",
    kind: Kind::Int {
        min: 0,
        max: 200,
        what: "a swappiness",
    },
    default: Value::Int(60),
    host: Some(Host {
        path: "/proc/sys/vm/swappiness",
        flag_words: DIGITS,
        access: Access::Set {
            required: false,
            lacks: None,
        },
    }),
    doc: "how reclaim weighs anonymous against file pages",
};

pub const MACHINE_SWAP_WRITE_RATE: Knob = Knob {
    key: "machine.swap_write_rate",
    kind: Kind::Bytes { align: 1, min: 0 },
    default: Value::Int(0),
    host: None,
    doc: "bytes per second of modelled time that a swap file or block device \
          writes, one write after another; with this and \
          machine.swap_write_latency_ns at 0, a write completes as soon as \
          reclaim has put its folio back on the LRU",
};

pub const MACHINE_SWAP_WRITE_LATENCY_NS: Knob = Knob {
    key: "machine.swap_write_latency_ns",
    kind: Kind::Int {
        min: 0,
        max: 1_000_000_000_000,
        what: "a time in nanoseconds",
    },
    default: Value::Int(0),
    host: None,
    doc: "how long each write to a swap file or block device takes beyond its \
          transfer at machine.swap_write_rate, in nanoseconds of modelled time; \
          writes overlap in it (the device's service time, not its bandwidth)",
};

pub const MACHINE_RANDOM_SEED: Knob = Knob {
    key: "machine.random_seed",
    kind: Kind::Int {
        min: 0,
        max: u64::MAX,
        what: "a seed",
    },
    default: Value::Int(0),
    host: None,
    doc: "the seed of the kernel's own random draws (`get_random_u32_below()`: the \
          bins of MGLRU's memcg LRU, which order global reclaim's visits to the \
          cgroups); a kernel draws them anew at each boot, so a sweep over seeds \
          shows how much the outcome depends on them",
};

pub const MACHINE_MEMCG_FLUSH_MS: Knob = Knob {
    key: "machine.memcg_flush_ms",
    kind: Kind::Int {
        min: 0,
        max: 2000,
        what: "a time in milliseconds",
    },
    default: Value::Int(2000),
    host: None,
    doc: "when the memory cgroups' periodic statistics flush (`flush_memcg_stats_dwork()`, \
          every 2 s) first runs, in milliseconds of the workload's modelled time from the \
          start of the run, which begins flushed: reclaim in a cgroup reads LRU sizes as of \
          the last flush, and a real machine's flush falls anywhere, so a sweep shows how \
          much the outcome depends on where",
};

/// One day, in ms.
const DAY_MS: u64 = 86_400_000;

pub const MACHINE_UPTIME_MS: Knob = Knob {
    key: "machine.uptime_ms",
    kind: Kind::Int {
        min: 0,
        max: u64::MAX / 1_000_000_000,
        what: "a time in milliseconds",
    },
    default: Value::Int(DAY_MS),
    host: None,
    doc: "how long the machine has been up when the workload starts: the age of the \
          generations MGLRU made at boot, which `lru_gen.min_ttl_ms` compares with; a VM \
          comparison sets the guest's",
};

/// Every knob, in documentation order.
pub const KNOBS: &[Knob] = &[
    ARCH,
    MEMORY,
    CPUS,
    THP_ENABLED,
    THP_USE_ZERO_PAGE,
    THP_SHRINK_UNDERUSED,
    KHUGEPAGED_MAX_PTES_NONE,
    KHUGEPAGED_MAX_PTES_SWAP,
    KHUGEPAGED_MAX_PTES_SHARED,
    KHUGEPAGED_PAGES_TO_SCAN,
    KHUGEPAGED_SCAN_SLEEP_MILLISECS,
    MTHP_ENABLED,
    FAULT_AROUND_BYTES,
    READ_AHEAD_KB,
    MAX_SECTORS_KB,
    PAGE_CLUSTER,
    VMA_RA_ENABLED,
    WATERMARK_BOOST_FACTOR,
    SWAPPINESS,
    LRU_GEN_ENABLED,
    LRU_GEN_MIN_TTL_MS,
    ZSWAP_MAX_POOL_PERCENT,
    ZSWAP_ACCEPT_THRESHOLD_PERCENT,
    ZSWAP_SHRINKER_ENABLED,
    ZSWAP_ENABLED,
    MACHINE_UNMANAGED,
    MACHINE_BOOT_USED,
    MACHINE_PCP_LIST,
    MACHINE_KSWAPD_PCP_LIST,
    MACHINE_PCP_HIGH,
    MACHINE_KSWAPD_PCP_HIGH,
    MACHINE_LOWMEM_RESERVE,
    MACHINE_MIN_FREE_KBYTES,
    MACHINE_UNMOVABLE_BLOCKS,
    MACHINE_RECLAIMABLE_BLOCKS,
    MACHINE_CMA_BLOCKS,
    MACHINE_FREE_UNMOVABLE,
    MACHINE_FREE_RECLAIMABLE,
    MACHINE_SWAP_WRITE_RATE,
    MACHINE_SWAP_WRITE_LATENCY_NS,
    MACHINE_UPTIME_MS,
    MACHINE_RANDOM_SEED,
    MACHINE_MEMCG_FLUSH_MS,
];

/// The PMD size in KiB: its `hugepages-<N>kB/enabled` defaults to
/// `inherit`, every smaller size to `never`.
const PMD_SIZE_KB: u64 = (PAGE_SIZE << 9) >> 10;

/// The default of `hugepages-<kb>kB/enabled`.
pub const fn mthp_default(kb: u64) -> MthpMode {
    if kb == PMD_SIZE_KB {
        MthpMode::Inherit
    } else {
        MTHP_ENABLED.default.mthp()
    }
}

/// One instance of a knob: a per-size knob has one per size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    pub knob: &'static Knob,
    /// The size in KiB of a per-size knob (None: not per size).
    pub kb: Option<u64>,
    /// The key with the size filled in.
    pub key: String,
    /// The host file with the size filled in (None: no file, or one that
    /// depends on the device, `<dev>`).
    pub path: Option<String>,
    pub default: Value,
}

impl Knob {
    /// The instances of this knob, in size order.
    pub fn instances(&'static self) -> Vec<Instance> {
        let one = |kb: Option<u64>| {
            let fill = |s: &str| match kb {
                Some(kb) => s.replace("<N>", &kb.to_string()),
                None => s.to_owned(),
            };
            Instance {
                knob: self,
                kb,
                key: fill(self.key),
                path: self
                    .host
                    .filter(|h| !h.path.contains("<dev>"))
                    .map(|h| fill(h.path)),
                default: match kb {
                    Some(kb) => Value::Mthp(mthp_default(kb)),
                    None => self.default,
                },
            }
        };
        match self.kind {
            Kind::Mthp => MTHP_SIZES_KB.iter().map(|&kb| one(Some(kb))).collect(),
            _ => vec![one(None)],
        }
    }

    /// `value` as the host file spells it (flags as [`Host::flag_words`]).
    pub fn host_spelling(&self, value: Value) -> String {
        match (value, self.host) {
            (Value::Flag(b), Some(h)) => if b { h.flag_words.1 } else { h.flag_words.0 }.to_owned(),
            _ => value.to_string(),
        }
    }

    /// Parse a value in the kernel's spelling (as [`Value`]'s `Display`
    /// writes it, or as the host file shows it); None if it is not one of
    /// this knob's values. Ranges are not checked.
    pub fn parse(&self, text: &str) -> Option<Value> {
        match self.kind {
            Kind::Arch => Arch::from_name(text).map(Value::Arch),
            Kind::Bytes { .. } | Kind::Int { .. } => text.parse().ok().map(Value::Int),
            Kind::Flag => match text {
                _ if self.host.is_some_and(|h| text == h.flag_words.1) => Some(Value::Flag(true)),
                _ if self.host.is_some_and(|h| text == h.flag_words.0) => Some(Value::Flag(false)),
                "1" | "true" => Some(Value::Flag(true)),
                "0" | "false" => Some(Value::Flag(false)),
                // /sys/kernel/mm/lru_gen/enabled shows its capabilities:
                // all of them or none.
                "0x0007" => Some(Value::Flag(true)),
                "0x0000" => Some(Value::Flag(false)),
                _ => None,
            },
            Kind::Thp => ThpMode::from_name(text).map(Value::Thp),
            Kind::Mthp => MthpMode::from_name(text).map(Value::Mthp),
            Kind::FreeCounts => FreeCounts::parse(text).map(Value::FreeCounts),
        }
    }
}

/// A typed field that holds a knob's value in some configuration (a
/// scenario's `System`, the kernel model's `Config`): what their
/// `knob_mut` functions return, so that defaults and copies between them
/// go through the table.
#[derive(Debug)]
pub enum FieldMut<'a> {
    Arch(&'a mut Arch),
    U64(&'a mut u64),
    U32(&'a mut u32),
    Flag(&'a mut bool),
    Thp(&'a mut ThpMode),
    Mthp(&'a mut MthpMode),
    FreeCounts(&'a mut FreeCounts),
}

impl FieldMut<'_> {
    /// The value the field holds.
    pub fn get(&self) -> Value {
        match self {
            FieldMut::Arch(a) => Value::Arch(**a),
            FieldMut::U64(n) => Value::Int(**n),
            FieldMut::U32(n) => Value::Int(u64::from(**n)),
            FieldMut::Flag(b) => Value::Flag(**b),
            FieldMut::Thp(m) => Value::Thp(**m),
            FieldMut::Mthp(m) => Value::Mthp(**m),
            FieldMut::FreeCounts(c) => Value::FreeCounts(**c),
        }
    }

    /// Store `value`; false (and nothing stored) if it is not of the
    /// field's type or does not fit.
    pub fn set(self, value: Value) -> bool {
        match (self, value) {
            (FieldMut::Arch(f), Value::Arch(v)) => *f = v,
            (FieldMut::U64(f), Value::Int(v)) => *f = v,
            (FieldMut::U32(f), Value::Int(v)) => match u32::try_from(v) {
                Ok(v) => *f = v,
                Err(_) => return false,
            },
            (FieldMut::Flag(f), Value::Flag(v)) => *f = v,
            (FieldMut::Thp(f), Value::Thp(v)) => *f = v,
            (FieldMut::Mthp(f), Value::Mthp(v)) => *f = v,
            (FieldMut::FreeCounts(f), Value::FreeCounts(v)) => *f = v,
            _ => return false,
        }
        true
    }
}

/// Every knob instance, in documentation order.
pub fn instances() -> impl Iterator<Item = Instance> {
    KNOBS.iter().flat_map(Knob::instances)
}

/// What a `[system]` key (as a scenario or `--set` writes it, without
/// `system.`) names.
#[derive(Clone, Copy, Debug)]
pub enum Setting {
    /// A knob; `kb` is the size of a per-size knob.
    Knob {
        knob: &'static Knob,
        kb: Option<u64>,
    },
    /// A patch-series switch (`series.<name>`).
    Switch(&'static Switch),
}

/// The knob or switch that `key` names (None: neither). A per-size key
/// names only the sizes of [`MTHP_SIZES_KB`], in canonical spelling
/// (`hugepages-64kB`).
pub fn lookup(key: &str) -> Option<Setting> {
    if let Some(name) = key.strip_prefix("series.") {
        return SWITCHES
            .iter()
            .find(|s| s.name == name)
            .map(Setting::Switch);
    }
    instances().find(|i| i.key == key).map(|i| Setting::Knob {
        knob: i.knob,
        kb: i.kb,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_defaults_are_of_their_kind() {
        let keys: std::collections::BTreeSet<_> = KNOBS.iter().map(|k| k.key).collect();
        assert_eq!(keys.len(), KNOBS.len());
        for k in KNOBS {
            let ok = matches!(
                (k.kind, k.default),
                (Kind::Arch, Value::Arch(_))
                    | (Kind::Bytes { .. } | Kind::Int { .. }, Value::Int(_))
                    | (Kind::Flag, Value::Flag(_))
                    | (Kind::Thp, Value::Thp(_))
                    | (Kind::Mthp, Value::Mthp(_))
                    | (Kind::FreeCounts, Value::FreeCounts(_))
            );
            assert!(
                ok,
                "{}: default {:?} is not a {:?}",
                k.key, k.default, k.kind
            );
            // The default reads back from its own spelling.
            assert_eq!(
                k.parse(&k.default.to_string()),
                Some(k.default),
                "{}",
                k.key
            );
            match (k.kind, k.default) {
                (Kind::Int { min, max, .. }, Value::Int(n)) => {
                    assert!((min..=max).contains(&n), "{}", k.key);
                }
                (Kind::Bytes { align, min }, Value::Int(n)) => {
                    assert!(n % align == 0 && n >= min, "{}", k.key);
                }
                _ => {}
            }
        }
    }

    #[test]
    fn kernel_defaults() {
        // mm/swap.c: page_cluster = 3 (with at least 16 MiB of RAM);
        // mm/memory.c: fault_around_pages = 65536 >> PAGE_SHIFT;
        // mm/khugepaged.c: khugepaged_max_ptes_none = HPAGE_PMD_NR - 1,
        // max_ptes_swap = HPAGE_PMD_NR / 8, max_ptes_shared = HPAGE_PMD_NR / 2,
        // pages_to_scan = HPAGE_PMD_NR * 8, scan_sleep_millisecs = 10000.
        assert_eq!(KHUGEPAGED_MAX_PTES_SWAP.default.int(), 512 / 8);
        assert_eq!(KHUGEPAGED_MAX_PTES_SHARED.default.int(), 512 / 2);
        assert_eq!(KHUGEPAGED_PAGES_TO_SCAN.default.int(), 512 * 8);
        assert_eq!(KHUGEPAGED_SCAN_SLEEP_MILLISECS.default.int(), 10000);
        assert_eq!(PAGE_CLUSTER.default.int(), 3);
        assert_eq!(FAULT_AROUND_BYTES.default.int() >> PAGE_SHIFT, 16);
        assert_eq!(KHUGEPAGED_MAX_PTES_NONE.default.int(), 511);
        assert_eq!(PAGE_SIZE, 4096);
        // mm/huge_memory.c: huge_anon_orders_inherit = BIT(PMD_ORDER).
        assert_eq!(mthp_default(2048), MthpMode::Inherit);
        assert_eq!(mthp_default(64), MthpMode::Never);
    }

    #[test]
    fn instances_fill_in_the_size() {
        let all: Vec<Instance> = instances().collect();
        assert_eq!(all.len(), KNOBS.len() - 1 + MTHP_SIZES_KB.len());
        let i = all
            .iter()
            .find(|i| i.key == "transparent_hugepage.hugepages-64kB.enabled")
            .unwrap();
        assert_eq!(i.kb, Some(64));
        assert_eq!(
            i.path.as_deref(),
            Some("/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled")
        );
        let ra = all.iter().find(|i| i.key == "read_ahead_kb").unwrap();
        assert_eq!(ra.path, None, "a device's file has no fixed path");
        for i in &all {
            if let Some(p) = &i.path {
                assert!(p.starts_with('/') && !p.contains('<'), "{p}");
            }
        }
    }

    #[test]
    fn lookup_finds_knobs_and_switches() {
        assert!(matches!(
            lookup("vm.page_cluster"),
            Some(Setting::Knob { knob, kb: None }) if *knob == PAGE_CLUSTER
        ));
        assert!(matches!(
            lookup("transparent_hugepage.hugepages-2048kB.enabled"),
            Some(Setting::Knob { kb: Some(2048), .. })
        ));
        assert!(lookup("transparent_hugepage.hugepages-8kB.enabled").is_none());
        assert!(matches!(
            lookup("series.batch_file_unmap"),
            Some(Setting::Switch(s)) if s.name == "batch_file_unmap"
        ));
        assert!(lookup("series.nope").is_none());
        assert!(lookup("page_cluster").is_none());
    }

    #[test]
    fn host_spelling_of_flags() {
        assert_eq!(VMA_RA_ENABLED.host_spelling(Value::Flag(false)), "false");
        assert_eq!(THP_USE_ZERO_PAGE.host_spelling(Value::Flag(true)), "1");
        assert_eq!(
            PAGE_CLUSTER.host_spelling(PAGE_CLUSTER.default),
            PAGE_CLUSTER.default.to_string()
        );
        assert_eq!(VMA_RA_ENABLED.parse("true"), Some(Value::Flag(true)));
        assert_eq!(ARCH.parse("aarch64"), Some(Value::Arch(Arch::Arm64)));
    }
}

#[cfg(test)]
mod docs {
    use super::*;

    /// The rows `| key | type | default | meaning |` of the `[system]`
    /// table of the scenario reference, as (key, default) without
    /// backticks and quotes, for the knobs (not `series.*` or swap).
    fn documented() -> Vec<(String, String)> {
        let doc = include_str!("../../../docs/scenarios.md");
        let start = doc.find("## `[system]`").expect("a [system] section");
        let section = &doc[start..];
        let end = section
            .find("\n### ")
            .expect("a subsection after the table");
        section[..end]
            .lines()
            .filter(|l| l.starts_with("| `"))
            .map(|l| {
                let cells: Vec<&str> = l.split(" | ").collect();
                let bare = |c: &str| c.trim_matches(['|', ' ', '`', '"']).to_owned();
                (
                    bare(cells[0]),
                    cells.get(2).map_or_else(String::new, |c| bare(c)),
                )
            })
            .filter(|(key, _)| !key.starts_with("series.") && key != "[[system.swap]]")
            .collect()
    }

    /// `24G`, `65536`: a size as the docs write a default.
    fn size(text: &str) -> Option<u64> {
        let (digits, shift) = match text.strip_suffix(['K', 'M', 'G']) {
            Some(d) => (d, 10 * (1 + "KMG".find(text.chars().last()?)? as u32)),
            None => (text, 0),
        };
        digits.parse::<u64>().ok().map(|n| n << shift)
    }

    /// The scenario language reference lists exactly the knobs of the
    /// table, in its order, with its defaults.
    #[test]
    fn the_scenario_reference_lists_every_knob() {
        let rows = documented();
        let keys: Vec<&str> = rows.iter().map(|(k, _)| k.as_str()).collect();
        let table: Vec<&str> = KNOBS.iter().map(|k| k.key).collect();
        assert_eq!(
            keys, table,
            "docs/scenarios.md [system] table vs knobs::KNOBS"
        );
        for ((_, default), knob) in rows.iter().zip(KNOBS) {
            match knob.kind {
                Kind::Mthp => {
                    let pmd = format!(
                        "{} for N = {}",
                        mthp_default(PMD_SIZE_KB).as_str(),
                        PMD_SIZE_KB
                    );
                    let other = format!("{} otherwise", knob.default);
                    let d = default.replace(['`', '"'], "");
                    assert!(
                        d.contains(&pmd) && d.contains(&other),
                        "{}: {default}",
                        knob.key
                    );
                }
                Kind::Bytes { .. } => {
                    assert_eq!(size(default), Some(knob.default.int()), "{}", knob.key)
                }
                _ => assert_eq!(*default, knob.default.to_string(), "{}", knob.key),
            }
        }
    }
}
