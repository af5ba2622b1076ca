pub mod contpte;
pub mod tlbflush;
