pub mod contpte;
