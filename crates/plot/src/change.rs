//! What a switch or key changes across a sweep, as a picture: the
//! `% change` heatmap of one value, base against patched, for every
//! combination of the other keys (rows: one key, columns: the rest), as
//! `foliosim diff TABLE --by KEY` tabulates it.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::html::esc;
use crate::{de, ImageFormat, Picture, FAMILY};

/// One value compared between the base and the patched points of a sweep.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Change {
    /// The value (`modelled_ns`, `pgfault`) and its phase.
    pub value: String,
    pub phase: String,
    /// The two sides, as `key=value`.
    pub base: String,
    pub patched: String,
    /// The key whose values are the rows, and those values.
    pub row_key: String,
    pub rows: Vec<String>,
    /// The keys whose combinations are the columns, and those
    /// combinations (values joined by ", ").
    pub col_key: String,
    pub cols: Vec<String>,
    /// `cells[row][col]`: the base and the patched value (None: no such
    /// point, or it failed).
    pub cells: Vec<Vec<(Option<i128>, Option<i128>)>>,
}

/// 100 × (patched − base) / base, when both exist and base is not 0.
fn percent(cell: (Option<i128>, Option<i128>)) -> Option<f64> {
    let (b, p) = (cell.0?, cell.1?);
    (b != 0).then(|| 100.0 * (p - b) as f64 / b as f64)
}

fn percent_text(p: Option<f64>) -> String {
    p.map_or_else(|| "n/a".into(), |p| format!("{p:+.1}%"))
}

impl Change {
    /// The heatmap as SVG text or PNG bytes.
    pub fn render(&self, format: ImageFormat) -> Result<Vec<u8>, String> {
        crate::render(self, format)
    }

    /// The largest |% change| (the end of the colour scale; at least 1).
    fn scale(&self) -> f64 {
        let all = self.cells.iter().flatten().filter_map(|c| percent(*c));
        all.fold(1.0, |m: f64, p| m.max(p.abs()))
    }

    /// The table of % changes as HTML, each cell's title its two values.
    pub fn html_table(&self) -> String {
        let mut h = format!(
            "<table><tr><th>{} \\ {}</th>",
            esc(&self.row_key),
            esc(&self.col_key)
        );
        for c in &self.cols {
            h += &format!("<th>{}</th>", esc(c));
        }
        h += "</tr>\n";
        for (r, row) in self.rows.iter().zip(&self.cells) {
            h += &format!("<tr><td>{}</td>", esc(r));
            for cell in row {
                let show = |v: Option<i128>| v.map_or_else(|| "-".into(), |v| v.to_string());
                h += &format!(
                    "<td class=\"n\" title=\"{} → {}\">{}</td>",
                    show(cell.0),
                    show(cell.1),
                    percent_text(percent(*cell))
                );
            }
            h += "</tr>\n";
        }
        h + "</table>\n"
    }

    fn cell_size(&self) -> (u32, u32) {
        let chars = self
            .cols
            .iter()
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0);
        ((chars as u32 * 8 + 16).max(96), 30)
    }

    fn left(&self) -> u32 {
        let chars = self
            .rows
            .iter()
            .map(|r| r.chars().count())
            .chain([self.row_key.chars().count()])
            .max()
            .unwrap_or(0);
        (chars as u32 * 8 + 24).max(80)
    }
}

/// The colour of a % change on a scale whose ends are ±`scale`: blue
/// below the base, red above, white at no change; grey for none.
fn colour(p: Option<f64>, scale: f64) -> (RGBColor, bool) {
    let Some(p) = p else {
        return (RGBColor(225, 225, 225), false);
    };
    let t = (p.abs() / scale).min(1.0);
    let end = if p < 0.0 {
        (33, 102, 172)
    } else {
        (178, 24, 43)
    };
    let mix = |e: u8| (255.0 - (255.0 - e as f64) * t).round() as u8;
    (RGBColor(mix(end.0), mix(end.1), mix(end.2)), t > 0.55)
}

const TOP: u32 = 96;
const BOTTOM: u32 = 36;

impl Picture for Change {
    fn size(&self) -> (u32, u32) {
        let (w, h) = self.cell_size();
        (
            (self.left() + w * self.cols.len() as u32 + 16).max(520),
            TOP + h * self.rows.len() as u32 + BOTTOM,
        )
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        root.fill(&WHITE).map_err(de)?;
        let (w, h) = self.cell_size();
        let left = self.left() as i32;
        let (w, h) = (w as i32, h as i32);
        let scale = self.scale();
        let at = |h: HPos, v: VPos| Pos::new(h, v);
        let font = |size: u32| (FAMILY, size).into_font().color(&BLACK);
        let text = |s: &str, xy: (i32, i32), size: u32, pos: Pos| -> Result<(), String> {
            root.draw(&Text::new(s.to_string(), xy, font(size).pos(pos)))
                .map_err(de)
        };
        let title = format!("{}: % change in phase {}", self.value, self.phase);
        text(&title, (8, 8), 16, at(HPos::Left, VPos::Top))?;
        let sides = format!("{} (base) → {} (patched)", self.base, self.patched);
        text(&sides, (8, 32), 13, at(HPos::Left, VPos::Top))?;
        text(&self.col_key, (left, 56), 12, at(HPos::Left, VPos::Top))?;
        text(
            &self.row_key,
            (8, TOP as i32 - 6),
            12,
            at(HPos::Left, VPos::Bottom),
        )?;
        for (j, c) in self.cols.iter().enumerate() {
            let x = left + j as i32 * w + w / 2;
            text(c, (x, TOP as i32 - 6), 12, at(HPos::Center, VPos::Bottom))?;
        }
        for (i, (r, row)) in self.rows.iter().zip(&self.cells).enumerate() {
            let y = TOP as i32 + i as i32 * h;
            text(r, (8, y + h / 2), 13, at(HPos::Left, VPos::Center))?;
            for (j, cell) in row.iter().enumerate() {
                let x = left + j as i32 * w;
                let p = percent(*cell);
                let (fill, dark) = colour(p, scale);
                root.draw(&Rectangle::new([(x, y), (x + w, y + h)], fill.filled()))
                    .map_err(de)?;
                root.draw(&Rectangle::new(
                    [(x, y), (x + w, y + h)],
                    RGBColor(255, 255, 255).stroke_width(1),
                ))
                .map_err(de)?;
                let colour = if dark { WHITE } else { BLACK };
                root.draw(&Text::new(
                    percent_text(p),
                    (x + w / 2, y + h / 2),
                    (FAMILY, 13)
                        .into_font()
                        .color(&colour)
                        .pos(at(HPos::Center, VPos::Center)),
                ))
                .map_err(de)?;
            }
        }
        let y = TOP as i32 + self.rows.len() as i32 * h + 10;
        let key = format!(
            "blue: below the base, red: above it; full colour at ±{scale:.1}%; grey: n/a \
             (no point, or base 0)"
        );
        text(&key, (8, y), 12, at(HPos::Left, VPos::Top))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change() -> Change {
        Change {
            value: "modelled_ns".into(),
            phase: "measured".into(),
            base: "series.batch=0".into(),
            patched: "series.batch=1".into(),
            row_key: "folio_size".into(),
            rows: vec!["4K".into(), "64K".into()],
            col_key: "arch, swap.0.kind".into(),
            cols: vec!["x86_64, file".into(), "x86_64, zram".into()],
            cells: vec![
                vec![(Some(100), Some(100)), (Some(0), Some(5))],
                vec![(Some(200), Some(150)), (Some(40), None)],
            ],
        }
    }

    #[test]
    fn percent_is_patched_against_base_and_none_without_a_base() {
        assert_eq!(percent((Some(200), Some(150))), Some(-25.0));
        assert_eq!(percent((Some(0), Some(5))), None);
        assert_eq!(percent((Some(40), None)), None);
        // The scale ends at the largest change, here 25%.
        assert_eq!(change().scale(), 25.0);
        assert_eq!(colour(Some(-25.0), 25.0).0, RGBColor(33, 102, 172));
        assert_eq!(colour(Some(0.0), 25.0).0, RGBColor(255, 255, 255));
    }

    #[test]
    fn the_heatmap_and_table_show_every_cell() {
        let c = change();
        let svg = String::from_utf8(c.render(ImageFormat::Svg).unwrap()).unwrap();
        for t in [
            "-25.0%",
            "+0.0%",
            "n/a",
            "x86_64, zram",
            "64K",
            "folio_size",
        ] {
            assert!(svg.contains(t), "{t} missing from the SVG");
        }
        let html = c.html_table();
        assert!(
            html.contains("<td class=\"n\" title=\"200 → 150\">-25.0%</td>"),
            "{html}"
        );
        assert!(html.contains("title=\"40 → -\">n/a<"), "{html}");
        assert_eq!(&c.render(ImageFormat::Png).unwrap()[1..4], b"PNG");
    }
}
