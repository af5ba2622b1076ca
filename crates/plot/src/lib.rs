//! Pictures of foliosim results: sweep plots (a counter against one grid
//! key, a line per combination of the others), folio maps (one cell per
//! page of a region at the end of a phase) and the self-contained HTML
//! report that puts them beside the counter tables.
//!
//! Drawing is plotters' (SVG always; PNG through its bitmap backend, then
//! encoded by the `image` crate it already uses). Text in both needs a
//! font for its metrics: the crate embeds DejaVu Sans Mono (Bitstream Vera
//! licence, `fonts/LICENSE-DejaVu`) and registers it with plotters'
//! `ab_glyph` renderer, so nothing depends on the system's fonts or
//! libraries. SVG text names the font family `DejaVu Sans Mono, monospace`
//! so a browser without it uses its own monospace face.

#![forbid(unsafe_code)]

pub mod change;
pub mod html;
pub mod lines;
pub mod map;
pub mod sweep;

use std::path::Path;

use plotters::prelude::*;

/// The embedded font (see the crate documentation).
static FONT: &[u8] = include_bytes!("../fonts/DejaVuSansMono.ttf");

/// The family name every text style of this crate uses.
pub(crate) const FAMILY: &str = "DejaVu Sans Mono";

/// Register the embedded font with plotters once per process.
pub(crate) fn fonts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for style in [FontStyle::Normal, FontStyle::Bold] {
            if plotters::style::register_font(FAMILY, style, FONT).is_err() {
                unreachable!("the embedded font is a valid TrueType font");
            }
        }
    });
}

/// The picture formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    Svg,
    Png,
}

impl ImageFormat {
    /// The format of an output path by its extension (`.svg`, `.png`).
    pub fn from_path(p: &Path) -> Result<ImageFormat, String> {
        match p
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("svg") => Ok(ImageFormat::Svg),
            Some("png") => Ok(ImageFormat::Png),
            _ => Err(format!(
                "{}: the picture's format comes from its extension: .svg or .png",
                p.display()
            )),
        }
    }
}

/// Something this crate draws, on any plotters backend.
pub(crate) trait Picture {
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String>;
}

/// Draw `pic` into the format asked for: the SVG text, or the PNG file's
/// bytes.
pub(crate) fn render(pic: &impl Picture, format: ImageFormat) -> Result<Vec<u8>, String> {
    fonts();
    let size = pic.size();
    match format {
        ImageFormat::Svg => {
            let mut s = String::new();
            {
                let root = SVGBackend::with_string(&mut s, size).into_drawing_area();
                pic.draw(&root)?;
                root.present().map_err(de)?;
            }
            Ok(s.into_bytes())
        }
        ImageFormat::Png => {
            let mut buf = vec![0u8; size.0 as usize * size.1 as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut buf, size).into_drawing_area();
                pic.draw(&root)?;
                root.present().map_err(de)?;
            }
            let img = image::RgbImage::from_raw(size.0, size.1, buf)
                .ok_or("internal error: the bitmap has the wrong size")?;
            let mut out = std::io::Cursor::new(Vec::new());
            img.write_to(&mut out, image::ImageOutputFormat::Png)
                .map_err(|e| format!("encoding the PNG: {e}"))?;
            Ok(out.into_inner())
        }
    }
}

/// Any drawing error as text.
pub(crate) fn de<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing failed: {e:?}")
}

/// A folio of `order` as the kernel's documentation writes its size
/// (`4 KiB`, `64 KiB`, `2 MiB`).
pub fn folio_size(order: u8) -> String {
    let kib = 4u64 << order;
    if kib >= 1024 && kib.trailing_zeros() >= 10 {
        format!("{} MiB", kib / 1024)
    } else {
        format!("{kib} KiB")
    }
}

/// `n` bytes as the scenario language writes sizes (`4K`, `64K`, `2M`,
/// `1G`; plain bytes when not a multiple of 1 KiB).
pub fn size_label(n: f64) -> String {
    if !(n.is_finite() && n >= 1.0 && n.fract() == 0.0) {
        return format!("{n}");
    }
    let n = n as u64;
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if n >= 1 << shift && n.trailing_zeros() >= shift {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}
