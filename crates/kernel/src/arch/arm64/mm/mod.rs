pub mod contpte;
pub(crate) mod tlbflush;
