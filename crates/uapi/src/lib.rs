//! The vocabulary shared by every layer of foliosim, as `include/uapi` is
//! for Linux: what the scenario language writes, what the kernel model
//! takes, what the native and VM engines pass to the host kernel and what
//! the reports name. No layer converts between look-alike copies of these
//! types; they all use the ones here.
//!
//! * [`mman`]: `PROT_*`, `MAP_*` and `MADV_*` with the kernel's values
//!   (`include/uapi/asm-generic/mman-common.h`, which x86_64 and arm64 both
//!   use).
//! * [`thp`]: `transparent_hugepage/enabled` and the per-size
//!   `hugepages-<size>kB/enabled` modes in sysfs spelling.
//! * [`swap`]: the kinds of swap device a scenario can ask for.
//! * [`knobs`]: the `[system]` knobs, one table of key, type, default,
//!   host file and doc; and the page size.
//! * [`series`]: the patch-series switches, one table of name, doc and
//!   default.
//! * [`counters`]: the counter names and who can observe each one
//!   (per process, system-wide, model only).
//! * [`vmstat`]: the model's counters by name (vmstat events, per-size
//!   mTHP stats, tracepoints, `sim/` primitives) and every name a fresh
//!   counter snapshot holds.
//! * [`pagemap`]: the pagemap, PAGEMAP_SCAN and kpageflags encodings and
//!   the counters of a pagemap step.
//! * [`foliomap`]: the per-page states of a folio map.
//! * [`names`]: the known names closest to a mistyped one ("did you mean").
//! * [`meminfo`]: the host's `/proc/meminfo` (total and available memory).
//! * [`Arch`]: the simulated or measured architecture; [`MAX_CPUS`].
//! * [`diag`]: what goes to standard error besides errors (`--quiet`,
//!   `--verbose`).

#![forbid(unsafe_code)]

pub mod counters;
pub mod diag;
pub mod foliomap;
pub mod knobs;
pub mod meminfo;
pub mod mman;
pub mod names;
pub mod pagedata;
pub mod pagemap;
pub mod rng;
pub mod series;
pub mod swap;
pub mod thp;
pub mod vmstat;

pub use knobs::{PAGE_SHIFT, PAGE_SIZE};
pub use mman::Madv;
pub use series::Series;
pub use swap::SwapKind;
pub use thp::{MthpMode, ThpMode};

/// At most this many CPUs: a simulated machine has no more (the model's
/// `mm_cpumask()` is one 64-bit word), and the native engine reports a
/// host's CPU count capped here.
pub const MAX_CPUS: usize = 64;

/// The architecture a run simulates or measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Arch {
    X86_64,
    /// arm64 with the 4 KiB granule.
    Arm64,
}

impl Arch {
    /// Every architecture, in the order reports list them.
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Arm64];

    /// The name in `uname -m` spelling except arm64 (the kernel's
    /// `ARCH=` name): `x86_64`, `arm64`.
    pub fn as_str(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
        }
    }

    /// Parse `x86_64` or `arm64` (also `aarch64`, what `uname -m` prints).
    pub fn from_name(s: &str) -> Option<Arch> {
        match s {
            "x86_64" => Some(Arch::X86_64),
            "arm64" | "aarch64" => Some(Arch::Arm64),
            _ => None,
        }
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
