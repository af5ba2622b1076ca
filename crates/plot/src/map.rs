//! Folio maps: one cell per page of a region at the end of a phase, a row
//! per page table (512 pages, 2 MiB), coloured by the size of the folio the
//! page belongs to; arm64 contpte blocks outlined in blue, PMD mappings in
//! black; swap entries grey, zero pages yellow, holes blank.

use plotters::prelude::*;

use foliosim_report::{FolioMap, PageState, Report};

use crate::{de, folio_size, size_label, ImageFormat, Picture, FAMILY};

/// Pages per row: one page table.
pub const ROW: usize = 512;
/// The most rows drawn (1 GiB of 4 KiB pages); a larger region is drawn
/// up to here, and the picture says so.
pub const MAX_ROWS: usize = 512;

const CELL_W: i32 = 2;
const LEFT: i32 = 84;
const TOP: i32 = 64;
const RIGHT: i32 = 24;

/// The fill of a folio order.
fn order_colour(order: u8) -> RGBColor {
    const C: [(u8, u8, u8); 10] = [
        (128, 115, 172), // 4 KiB
        (158, 202, 225), // 8 KiB
        (107, 174, 214), // 16 KiB
        (33, 113, 181),  // 32 KiB
        (49, 163, 84),   // 64 KiB
        (161, 217, 155), // 128 KiB
        (253, 174, 107), // 256 KiB
        (230, 85, 13),   // 512 KiB
        (140, 81, 10),   // 1 MiB
        (203, 24, 29),   // 2 MiB
    ];
    let (r, g, b) = C.get(order as usize).copied().unwrap_or((99, 99, 99));
    RGBColor(r, g, b)
}

const SWAP: RGBColor = RGBColor(110, 110, 110);
const ZERO: RGBColor = RGBColor(255, 237, 160);
const HUGE_ZERO: RGBColor = RGBColor(254, 196, 79);
const CONT: RGBColor = RGBColor(8, 48, 107);
const FRAME: RGBColor = RGBColor(200, 200, 200);

/// The fill of a state (None: blank).
fn fill(s: PageState) -> Option<RGBColor> {
    match s {
        PageState::None => None,
        PageState::Swap => Some(SWAP),
        PageState::Zero { huge: false } => Some(ZERO),
        PageState::Zero { huge: true } => Some(HUGE_ZERO),
        PageState::Present { order, .. } => Some(order_colour(order)),
    }
}

/// A folio map, ready to draw.
#[derive(Debug)]
pub struct MapPlot {
    title: String,
    map: FolioMap,
    states: Vec<PageState>,
    rows: usize,
    cell_h: i32,
    /// Shown under the title: what the picture leaves out, the census.
    pub notes: Vec<String>,
}

/// The folio map of `region` at the end of `phase` in `report`, with an
/// error that lists what the report has when it has no such map.
pub fn find<'r>(report: &'r Report, phase: &str, region: &str) -> Result<&'r FolioMap, String> {
    let p = report
        .phases
        .iter()
        .find(|p| p.name == phase)
        .ok_or_else(|| {
            let names: Vec<&str> = report.phases.iter().map(|p| p.name.as_str()).collect();
            format!(
                "--phase {phase}: no such phase; the report has: {}",
                names.join(", ")
            )
        })?;
    p.maps.get(region).ok_or_else(|| {
        if p.maps.is_empty() {
            format!(
                "phase {phase} has no folio maps: map a region with `map = true` on its mmap \
                 step (or --set step.N.map=true) and run again"
            )
        } else {
            let names: Vec<&str> = p.maps.keys().map(String::as_str).collect();
            format!(
                "--region {region}: no folio map of it in phase {phase}; maps: {}",
                names.join(", ")
            )
        }
    })
}

impl MapPlot {
    /// The picture of `map`, titled with the report's scenario, arch,
    /// phase and region.
    pub fn new(report: &Report, phase: &str, region: &str) -> Result<MapPlot, String> {
        let map = find(report, phase, region)?.clone();
        let title = format!(
            "{} ({}, {}): {region} at the end of {phase}",
            report.scenario, report.arch, report.engine
        );
        MapPlot::of(title, map)
    }

    /// The picture of `map` under `title`.
    pub fn of(title: String, map: FolioMap) -> Result<MapPlot, String> {
        let states: Vec<PageState> = map
            .pages
            .iter()
            .map(|&b| PageState::decode(b).ok_or_else(|| format!("{b:#04x} is not a page state")))
            .collect::<Result<_, _>>()?;
        let total_rows = (map.first_index as usize + states.len())
            .div_ceil(ROW)
            .max(1);
        let rows = total_rows.min(MAX_ROWS);
        let mut notes = Vec::new();
        if total_rows > MAX_ROWS {
            notes.push(format!(
                "showing the first {MAX_ROWS} of {total_rows} page tables ({} of {} pages)",
                MAX_ROWS * ROW - map.first_index as usize,
                states.len()
            ));
        }
        notes.push(census(&map));
        let cell_h = match rows {
            0..=8 => 16,
            9..=32 => 8,
            33..=128 => 4,
            _ => 2,
        };
        Ok(MapPlot {
            title,
            map,
            states,
            rows,
            cell_h,
            notes,
        })
    }

    /// The picture as SVG text or PNG bytes.
    pub fn render(&self, format: ImageFormat) -> Result<Vec<u8>, String> {
        crate::render(self, format)
    }

    /// The legend's entries: those of states the map has.
    fn legend(&self) -> Vec<(String, Option<RGBColor>, Option<RGBColor>)> {
        let census = self.map.census();
        let mut orders: Vec<u8> = census.keys().filter_map(|s| s.order()).collect();
        orders.dedup();
        let mut out: Vec<(String, Option<RGBColor>, Option<RGBColor>)> = orders
            .iter()
            .map(|&o| {
                (
                    format!("{} folio", folio_size(o)),
                    Some(order_colour(o)),
                    None,
                )
            })
            .collect();
        let has = |f: &dyn Fn(&PageState) -> bool| census.keys().any(f);
        if has(&|s| matches!(s, PageState::Present { contpte: true, .. })) {
            out.push(("contpte block".into(), None, Some(CONT)));
        }
        if has(&|s| matches!(s, PageState::Present { pmd: true, .. })) {
            out.push(("PMD mapping".into(), None, Some(BLACK)));
        }
        if has(&|s| *s == PageState::Swap) {
            out.push(("swap entry".into(), Some(SWAP), None));
        }
        if has(&|s| *s == PageState::Zero { huge: false }) {
            out.push(("zero page".into(), Some(ZERO), None));
        }
        if has(&|s| *s == PageState::Zero { huge: true }) {
            out.push(("huge zero page".into(), Some(HUGE_ZERO), None));
        }
        if has(&|s| *s == PageState::None) {
            out.push(("not mapped".into(), Some(WHITE), None));
        }
        out
    }

    /// (x, y) of the top-left corner of page-table column `col` of row
    /// `row`.
    fn at(&self, row: usize, col: usize) -> (i32, i32) {
        (LEFT + col as i32 * CELL_W, TOP + row as i32 * self.cell_h)
    }
}

/// "256 pages: 256 in 64KB folios (16 contpte blocks), ..."
fn census(map: &FolioMap) -> String {
    let c = map.census();
    let mut parts = Vec::new();
    let mut by_order: std::collections::BTreeMap<u8, u64> = Default::default();
    let (mut cont, mut pmd, mut swap, mut zero, mut none) = (0, 0, 0, 0, 0);
    for (s, n) in &c {
        match *s {
            PageState::Present {
                order,
                pmd: p,
                contpte,
            } => {
                *by_order.entry(order).or_default() += n;
                if contpte {
                    cont += n;
                }
                if p {
                    pmd += n;
                }
            }
            PageState::Swap => swap += n,
            PageState::Zero { .. } => zero += n,
            PageState::None => none += n,
        }
    }
    for (o, n) in by_order {
        parts.push(format!("{n} in {} folios", folio_size(o)));
    }
    for (n, what) in [
        (cont, "contpte"),
        (pmd, "PMD-mapped"),
        (swap, "swap entries"),
        (zero, "zero page"),
        (none, "not mapped"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    format!("{} pages: {}", map.pages.len(), parts.join(", "))
}

impl Picture for MapPlot {
    fn size(&self) -> (u32, u32) {
        let w = LEFT + ROW as i32 * CELL_W + RIGHT;
        let h = TOP + self.rows as i32 * self.cell_h + 28 + 24 * self.notes.len() as i32 + 20;
        (w as u32, h as u32)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        root.fill(&WHITE).map_err(de)?;
        text(root, &self.title, (10, 8), 17)?;
        let what = "one row = one page table (512 pages, 2 MiB); one cell = one 4 KiB page";
        text(root, what, (10, 32), 12)?;
        self.draw_rows(root)?;
        self.draw_cells(root)?;
        self.draw_legend(root)
    }
}

/// `s` at `at` in the crate's font of `size` pixels.
fn text<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    s: &str,
    at: (i32, i32),
    size: u32,
) -> Result<(), String> {
    root.draw(&Text::new(s.to_string(), at, (FAMILY, size).into_font()))
        .map_err(de)
}

impl MapPlot {
    /// Row frames and their offsets in the region.
    fn draw_rows<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        let h = self.cell_h;
        let label_every = match h {
            16 | 8 => 1,
            4 => 4,
            _ => 16,
        };
        for row in 0..self.rows {
            let (x0, y0) = self.at(row, 0);
            let frame = [(x0, y0), (x0 + ROW as i32 * CELL_W, y0 + h)];
            root.draw(&Rectangle::new(frame, FRAME.stroke_width(1)))
                .map_err(de)?;
            if row % label_every == 0 {
                let off = (row * ROW) as i64 - self.map.first_index as i64;
                let label = if off <= 0 {
                    "+0".to_string()
                } else {
                    format!("+{}", size_label((off as u64 * 4096) as f64))
                };
                text(root, &label, (8, y0 + (h - 12).max(0) / 2), 11)?;
            }
        }
        Ok(())
    }

    /// The pages: one rectangle per run of equal state within a row, an
    /// outline per contpte block and around PMD mappings.
    fn draw_cells<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        let (first, h) = (self.map.first_index as usize, self.cell_h);
        let limit = (self.rows * ROW)
            .saturating_sub(first)
            .min(self.states.len());
        let mut i = 0;
        while i < limit {
            let (row, col) = ((first + i) / ROW, (first + i) % ROW);
            let s = self.states[i];
            let mut n = 1;
            while i + n < limit && col + n < ROW && self.states[i + n] == s {
                n += 1;
            }
            let (x0, y0) = self.at(row, col);
            let x1 = x0 + n as i32 * CELL_W;
            if let Some(c) = fill(s) {
                root.draw(&Rectangle::new([(x0, y0), (x1, y0 + h)], c.filled()))
                    .map_err(de)?;
            }
            let outline = |a: i32, b: i32, style: ShapeStyle| {
                root.draw(&Rectangle::new([(a, y0), (b - 1, y0 + h - 1)], style))
                    .map_err(de)
            };
            match s {
                PageState::Present { contpte: true, .. } => {
                    // One outline per contiguous block of 16 entries.
                    for c in (col - col % 16..col + n).step_by(16) {
                        let (bx, _) = self.at(row, c);
                        outline(bx.max(x0), (bx + 16 * CELL_W).min(x1), CONT.stroke_width(1))?;
                    }
                }
                PageState::Present { pmd: true, .. } | PageState::Zero { huge: true } => {
                    outline(x0, x1, BLACK.stroke_width(2))?;
                }
                _ => {}
            }
            i += n;
        }
        Ok(())
    }

    /// The legend and the notes under the map.
    fn draw_legend<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        let mut y = TOP + self.rows as i32 * self.cell_h + 12;
        let mut x = 10;
        for (label, fill, outline) in self.legend() {
            let box_ = [(x, y), (x + 14, y + 14)];
            if let Some(c) = fill {
                root.draw(&Rectangle::new(box_, c.filled())).map_err(de)?;
            }
            let edge = outline.unwrap_or(FRAME);
            root.draw(&Rectangle::new(box_, edge.stroke_width(2)))
                .map_err(de)?;
            text(root, &label, (x + 20, y + 1), 12)?;
            x += 20 + 8 * label.len() as i32 + 18;
        }
        y += 26;
        for n in &self.notes {
            text(root, n, (10, y), 12)?;
            y += 24;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(first_index: u16, runs: &[(PageState, u64)]) -> FolioMap {
        let runs: Vec<(u8, u64)> = runs.iter().map(|(s, n)| (s.encode(), *n)).collect();
        FolioMap::from_runs(first_index, &runs).unwrap()
    }

    const C64: PageState = PageState::Present {
        order: 4,
        pmd: false,
        contpte: true,
    };

    #[test]
    fn cells_legend_and_census() {
        let map = m(
            0,
            &[(C64, 256), (PageState::Swap, 16), (PageState::None, 240)],
        );
        let p = MapPlot::of("t".into(), map).unwrap();
        assert_eq!(p.rows, 1);
        assert_eq!(
            p.notes,
            ["512 pages: 256 in 64 KiB folios, 256 contpte, 16 swap entries, 240 not mapped"]
        );
        let labels: Vec<String> = p.legend().into_iter().map(|l| l.0).collect();
        assert_eq!(
            labels,
            ["64 KiB folio", "contpte block", "swap entry", "not mapped"]
        );
        let svg = String::from_utf8(p.render(ImageFormat::Svg).unwrap()).unwrap();
        // 16 contpte outlines in the contpte colour, one fill per run.
        let cont = format!("stroke=\"#{:02X}{:02X}{:02X}\"", CONT.0, CONT.1, CONT.2);
        assert_eq!(
            svg.matches(&cont).count(),
            16 + 1,
            "{cont}: blocks + legend"
        );
        let g = order_colour(4);
        let fill64 = format!("fill=\"#{:02X}{:02X}{:02X}\"", g.0, g.1, g.2);
        assert_eq!(svg.matches(&fill64).count(), 1 + 1, "one run + legend");
        let png = p.render(ImageFormat::Png).unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }

    #[test]
    fn huge_regions_are_capped_and_say_so() {
        // 4 GiB: 2048 page tables, starting mid-table.
        let map = m(100, &[(PageState::Swap, 2048 * 512)]);
        let p = MapPlot::of("t".into(), map).unwrap();
        assert_eq!(p.rows, MAX_ROWS);
        assert!(
            p.notes[0].starts_with("showing the first 512 of 2049 page tables"),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn missing_maps_say_how_to_get_one() {
        let r = Report {
            phases: vec![foliosim_report::Phase {
                name: "p".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let e = find(&r, "p", "a").unwrap_err();
        assert!(e.contains("map = true"), "{e}");
        let e = find(&r, "q", "a").unwrap_err();
        assert!(e.contains("the report has: p"), "{e}");
    }
}
