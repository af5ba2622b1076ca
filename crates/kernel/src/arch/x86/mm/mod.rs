pub mod tlb;
