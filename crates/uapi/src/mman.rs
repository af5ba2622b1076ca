//! Memory-mapping constants with the values of
//! `include/uapi/asm-generic/mman-common.h` and `mman.h` (x86_64 and arm64
//! share them).

/// `PROT_READ`
pub const PROT_READ: i32 = 0x1;
/// `PROT_WRITE`
pub const PROT_WRITE: i32 = 0x2;
/// `PROT_EXEC`
pub const PROT_EXEC: i32 = 0x4;

/// `MAP_SHARED`
pub const MAP_SHARED: i32 = 0x01;
/// `MAP_PRIVATE`
pub const MAP_PRIVATE: i32 = 0x02;
/// `MAP_SHARED_VALIDATE`
pub const MAP_SHARED_VALIDATE: i32 = 0x03;
/// The mapping-type bits (`MAP_TYPE`).
pub const MAP_TYPE: i32 = 0x0f;
/// `MAP_FIXED`
pub const MAP_FIXED: i32 = 0x10;
/// `MAP_ANONYMOUS`
pub const MAP_ANONYMOUS: i32 = 0x20;
/// `MAP_NORESERVE`
pub const MAP_NORESERVE: i32 = 0x4000;
/// `MAP_POPULATE`
pub const MAP_POPULATE: i32 = 0x8000;
/// `MAP_FIXED_NOREPLACE`
pub const MAP_FIXED_NOREPLACE: i32 = 0x10_0000;

/// `MREMAP_MAYMOVE` (include/uapi/linux/mman.h)
pub const MREMAP_MAYMOVE: i32 = 1;
/// `MREMAP_FIXED`
pub const MREMAP_FIXED: i32 = 2;
/// `MREMAP_DONTUNMAP`
pub const MREMAP_DONTUNMAP: i32 = 4;

/// `madvise(2)` advice, with the kernel's values (`MADV_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Madv {
    Normal = 0,
    Random = 1,
    Sequential = 2,
    Willneed = 3,
    Dontneed = 4,
    Free = 8,
    Hugepage = 14,
    Nohugepage = 15,
    Cold = 20,
    Pageout = 21,
    PopulateRead = 22,
    PopulateWrite = 23,
    Collapse = 25,
}

impl Madv {
    /// Every advice, in value order.
    pub const ALL: [Madv; 13] = [
        Madv::Normal,
        Madv::Random,
        Madv::Sequential,
        Madv::Willneed,
        Madv::Dontneed,
        Madv::Free,
        Madv::Hugepage,
        Madv::Nohugepage,
        Madv::Cold,
        Madv::Pageout,
        Madv::PopulateRead,
        Madv::PopulateWrite,
        Madv::Collapse,
    ];

    /// The `MADV_*` value passed to madvise(2).
    pub fn raw(self) -> i32 {
        self as i32
    }

    /// The advice of a raw `MADV_*` value, if foliosim knows it.
    pub fn from_raw(v: i32) -> Option<Madv> {
        Madv::ALL.into_iter().find(|m| m.raw() == v)
    }

    /// The scenario language's name: the `MADV_` suffix in lower case
    /// (`dontneed`, `populate_read`).
    pub fn name(self) -> &'static str {
        match self {
            Madv::Normal => "normal",
            Madv::Random => "random",
            Madv::Sequential => "sequential",
            Madv::Willneed => "willneed",
            Madv::Dontneed => "dontneed",
            Madv::Free => "free",
            Madv::Hugepage => "hugepage",
            Madv::Nohugepage => "nohugepage",
            Madv::Cold => "cold",
            Madv::Pageout => "pageout",
            Madv::PopulateRead => "populate_read",
            Madv::PopulateWrite => "populate_write",
            Madv::Collapse => "collapse",
        }
    }

    /// Parse a name as [`Madv::name`] spells it.
    pub fn from_name(s: &str) -> Option<Madv> {
        Madv::ALL.into_iter().find(|m| m.name() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_values_are_the_uapi_ones() {
        // include/uapi/asm-generic/mman-common.h
        assert_eq!(Madv::Dontneed.raw(), 4);
        assert_eq!(Madv::Free.raw(), 8);
        assert_eq!(Madv::Hugepage.raw(), 14);
        assert_eq!(Madv::Cold.raw(), 20);
        assert_eq!(Madv::Pageout.raw(), 21);
        assert_eq!(Madv::PopulateWrite.raw(), 23);
        assert_eq!(Madv::Collapse.raw(), 25);
        for m in Madv::ALL {
            assert_eq!(Madv::from_raw(m.raw()), Some(m));
            assert_eq!(Madv::from_name(m.name()), Some(m));
        }
        assert_eq!(Madv::from_raw(5), None);
    }
}
