//! The per-page states of a folio map: one byte per page of a region at the
//! end of a phase (`map = true` on a region's mmap step), written by the
//! simulator (a page-table walk) and the native engine (pagemap,
//! kpageflags and PAGEMAP_SCAN), stored in reports and drawn by
//! `foliosim plot --map`.
//!
//! Encoding of a byte:
//!
//! | value | meaning |
//! |---|---|
//! | `0x00` | not present: no table, a none entry (a hole) |
//! | `0x01` | a swap entry (non-present, non-none PTE) |
//! | `0x02` | the shared zero page, mapped by a PTE |
//! | `0x03` | the huge zero page, mapped by a PMD |
//! | `0x10 \| order` | a present page of a folio of that order (0..=15), mapped by a PTE |
//! | `+ 0x20` | ... whose PTE has the contiguous bit (arm64 contpte) |
//! | `+ 0x40` | ... mapped by a PMD (then never contpte) |
//!
//! Every other value is invalid ([`PageState::decode`] refuses it).

/// What one page of a mapped region is at the end of a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PageState {
    /// No entry (a hole, or no page table).
    None,
    /// A swap entry.
    Swap,
    /// The shared zero page; `huge`: the huge zero page through a PMD.
    Zero { huge: bool },
    /// A page of a folio of `order`, mapped by a PMD or by a PTE (which
    /// may carry arm64's contiguous bit).
    Present { order: u8, pmd: bool, contpte: bool },
}

const PRESENT: u8 = 0x10;
const CONT: u8 = 0x20;
const PMD: u8 = 0x40;

impl PageState {
    /// The byte of this state (see the module documentation).
    pub fn encode(self) -> u8 {
        match self {
            PageState::None => 0,
            PageState::Swap => 1,
            PageState::Zero { huge: false } => 2,
            PageState::Zero { huge: true } => 3,
            PageState::Present {
                order,
                pmd,
                contpte,
            } => {
                assert!(order < 16, "folio order {order} does not fit a folio map");
                PRESENT | order | if contpte { CONT } else { 0 } | if pmd { PMD } else { 0 }
            }
        }
    }

    /// The state of byte `b`, or None for a byte no state encodes to.
    pub fn decode(b: u8) -> Option<PageState> {
        Some(match b {
            0 => PageState::None,
            1 => PageState::Swap,
            2 => PageState::Zero { huge: false },
            3 => PageState::Zero { huge: true },
            _ if b & 0x80 == 0 && b & PRESENT != 0 && !(b & CONT != 0 && b & PMD != 0) => {
                PageState::Present {
                    order: b & 0x0f,
                    pmd: b & PMD != 0,
                    contpte: b & CONT != 0,
                }
            }
            _ => return None,
        })
    }

    /// The folio order of a present page.
    pub fn order(self) -> Option<u8> {
        match self {
            PageState::Present { order, .. } => Some(order),
            _ => None,
        }
    }
}

/// The per-page map of one region at the end of a phase.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FolioMap {
    /// The page-table index (0..512) of the region's first page, so that a
    /// drawing can put one page table per row.
    pub first_index: u16,
    /// One [`PageState`] byte per page of the region, in address order.
    pub pages: Vec<u8>,
}

impl FolioMap {
    /// Run-length encoding: `(byte, count)` pairs in address order.
    pub fn runs(&self) -> Vec<(u8, u64)> {
        let mut out: Vec<(u8, u64)> = Vec::new();
        for &b in &self.pages {
            match out.last_mut() {
                Some((v, n)) if *v == b => *n += 1,
                _ => out.push((b, 1)),
            }
        }
        out
    }

    /// The map of `runs`, checking every byte.
    pub fn from_runs(first_index: u16, runs: &[(u8, u64)]) -> Result<FolioMap, String> {
        let mut pages = Vec::new();
        for &(b, n) in runs {
            if PageState::decode(b).is_none() {
                return Err(format!("{b:#04x} is not a page state"));
            }
            pages.resize(pages.len() + n as usize, b);
        }
        Ok(FolioMap { first_index, pages })
    }

    /// How many pages are in each state.
    pub fn census(&self) -> std::collections::BTreeMap<PageState, u64> {
        let mut m = std::collections::BTreeMap::new();
        for &b in &self.pages {
            if let Some(s) = PageState::decode(b) {
                *m.entry(s).or_insert(0) += 1;
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_decodes_to_itself_or_nothing() {
        let mut valid = 0;
        for b in 0..=255u8 {
            if let Some(s) = PageState::decode(b) {
                assert_eq!(s.encode(), b, "{s:?}");
                valid += 1;
            }
        }
        // none, swap, two zero pages, 16 orders × (PTE, contpte, PMD).
        assert_eq!(valid, 4 + 16 * 3);
    }

    #[test]
    fn runs_round_trip() {
        let m = FolioMap {
            first_index: 7,
            pages: vec![0, 0, 0x14, 0x14, 1, 0x14],
        };
        assert_eq!(m.runs(), vec![(0, 2), (0x14, 2), (1, 1), (0x14, 1)]);
        assert_eq!(FolioMap::from_runs(7, &m.runs()).unwrap(), m);
        assert!(FolioMap::from_runs(0, &[(0x80, 1)]).is_err());
    }
}
