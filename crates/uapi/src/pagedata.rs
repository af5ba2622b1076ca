//! What a page holds ([`PageContent`]): the scenario's `data` kinds as one
//! byte per page, and the bytes both engines mean by each kind
//! ([`fill_page`]). The native engine writes those bytes; the kernel model
//! keeps the kind per page and compresses a page of it when zswap stores
//! one, so that both see data of the same compressibility.

use crate::PAGE_SIZE;

/// The content of a page, by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PageContent(pub u8);

impl PageContent {
    /// All zero bytes (what `is_folio_zero_filled()` finds).
    pub const ZERO: PageContent = PageContent(0);
    /// A touch's one-byte store (the value 1) in an otherwise zero page.
    pub const STORE: PageContent = PageContent(1);
    /// One non-zero byte ([`REPEATED_BYTE`]) in every position.
    pub const REPEATED: PageContent = PageContent(2);

    /// The first `percent` percent of the page pseudo-random bytes, the rest
    /// zero (1 to 100).
    pub const fn random(percent: u8) -> PageContent {
        assert!(percent >= 1 && percent <= 100);
        PageContent(2 + percent)
    }

    /// The random share in percent of a `random` kind.
    pub const fn random_percent(self) -> Option<u8> {
        if self.0 > 2 {
            Some(self.0 - 2)
        } else {
            None
        }
    }

    /// How many distinct kinds there are (codes 0 to `COUNT - 1`).
    pub const COUNT: usize = 103;

    /// Whether the page holds a non-zero byte.
    pub const fn nonzero(self) -> bool {
        self.0 != 0
    }
}

/// The byte of `data = "repeated"`.
pub const REPEATED_BYTE: u8 = 0xa5;

/// Fill `page` (one page) with what a whole-page store of `content`
/// leaves there; `seed` varies the random bytes from page to page (the
/// native engine passes the page's address). A `STORE` page is its byte
/// at offset 0.
pub fn fill_page(content: PageContent, seed: u64, page: &mut [u8]) {
    debug_assert_eq!(page.len() as u64, PAGE_SIZE);
    match content {
        PageContent::ZERO => page.fill(0),
        PageContent::STORE => {
            page.fill(0);
            page[0] = 1;
        }
        PageContent::REPEATED => page.fill(REPEATED_BYTE),
        c => {
            let percent = c.random_percent().unwrap_or(100) as usize;
            let n = page.len() * percent / 100;
            // xorshift64*, seeded away from zero.
            let mut x = seed ^ 0x9e37_79b9_7f4a_7c15;
            if x == 0 {
                x = 1;
            }
            for chunk in page[..n].chunks_mut(8) {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                let v = x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
                chunk.copy_from_slice(&v[..chunk.len()]);
            }
            page[n..].fill(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_share_and_zero_tail() {
        let mut p = vec![0xffu8; PAGE_SIZE as usize];
        fill_page(PageContent::random(25), 7, &mut p);
        assert!(p[1024..].iter().all(|&b| b == 0));
        // Random bytes: most of the first quarter differs from zero.
        assert!(p[..1024].iter().filter(|&&b| b != 0).count() > 1000);
        let mut q = vec![0u8; PAGE_SIZE as usize];
        fill_page(PageContent::random(25), 8, &mut q);
        assert_ne!(p[..1024], q[..1024], "pages of different seeds differ");
        assert_eq!(PageContent::random(25).random_percent(), Some(25));
        assert_eq!(PageContent::REPEATED.random_percent(), None);
    }
}
