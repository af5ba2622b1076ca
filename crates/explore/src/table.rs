//! The sweep's points and results as the tidy table (`foliosim-table`)
//! reads them.

use foliosim_report::Report;
use foliosim_table::{PointOutcome, SweepPoint};

use crate::run::PointResult;
use crate::spec::Point;

impl SweepPoint for Point {
    fn index(&self) -> usize {
        self.index
    }
    fn scenario(&self) -> &str {
        &self.name
    }
    fn arch(&self) -> &str {
        &self.arch
    }
    fn grid(&self) -> &[(String, String)] {
        &self.grid
    }
}

impl PointOutcome for PointResult {
    type Point = Point;
    fn point(&self) -> &Point {
        &self.point
    }
    fn engine(&self) -> &str {
        &self.engine
    }
    fn report(&self) -> Result<&Report, &str> {
        self.result.as_ref().map_err(String::as_str)
    }
}
