//! Swap device kinds (`[[system.swap]] kind = ...`).

/// What kind of device backs a swap area. The kind decides which folios a
/// swap-out may keep whole (mm/swapfile.c: a swap file never gets a
/// cluster for a large folio; block devices and zram do) and whether
/// swap-in is synchronous (`SWP_SYNCHRONOUS_IO`: zram).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SwapKind {
    /// A swap file on a filesystem.
    File,
    /// A block device (natively a loop device over a file).
    Block { rotational: bool },
    /// A zram device: synchronous, compressed RAM.
    Zram,
}

impl SwapKind {
    /// The scenario language's word: `file`, `block`, `zram`.
    pub fn name(self) -> &'static str {
        match self {
            SwapKind::File => "file",
            SwapKind::Block { .. } => "block",
            SwapKind::Zram => "zram",
        }
    }
}
