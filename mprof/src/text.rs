//! Text of the plots: measured and, in PNGs, rasterised with ab_glyph from
//! DejaVu Sans, which is embedded in the binary (the `dejavu` crate), so no
//! system font or font library is needed. SVGs get `<text>` elements that
//! the viewer renders.
//!
//! NOTE: plotters' own `ab_glyph` text drops each glyph's left side bearing,
//! which spaces letters unevenly ("memor y"), so labels are collected while
//! plotters draws the lines and drawn afterwards, here.

use ab_glyph::{Font, FontRef, PxScale, ScaleFont, point};
use plotters::prelude::*;
use plotters::style::FontTransform;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::sync::OnceLock;

/// One piece of text, at a pixel position of the whole image.
#[derive(Clone)]
pub struct Label {
    pub text: String,
    pub at: (i32, i32),
    /// Font size in pixels (the em, as CSS and SVG use it).
    pub size: f32,
    pub color: RGBColor,
    pub h: HPos,
    pub v: VPos,
    pub bold: bool,
    /// Reads upwards, as a y-axis description does.
    pub vertical: bool,
}

impl Label {
    pub fn new(text: impl Into<String>, at: (i32, i32), size: f32) -> Label {
        Label {
            text: text.into(),
            at,
            size,
            color: BLACK,
            h: HPos::Left,
            v: VPos::Center,
            bold: false,
            vertical: false,
        }
    }

    pub fn anchor(mut self, h: HPos, v: VPos) -> Label {
        self.h = h;
        self.v = v;
        self
    }

    pub fn bold(mut self) -> Label {
        self.bold = true;
        self
    }

    pub fn vertical(mut self) -> Label {
        self.vertical = true;
        self
    }
}

struct Fonts {
    regular: FontRef<'static>,
    bold: FontRef<'static>,
}

fn fonts() -> Option<&'static Fonts> {
    static FONTS: OnceLock<Option<Fonts>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            Some(Fonts {
                regular: FontRef::try_from_slice(dejavu::sans::regular()).ok()?,
                bold: FontRef::try_from_slice(dejavu::sans::bold()).ok()?,
            })
        })
        .as_ref()
}

fn font(bold: bool) -> Option<&'static FontRef<'static>> {
    fonts().map(|f| if bold { &f.bold } else { &f.regular })
}

/// ab_glyph's scale is the height from descender to ascender; a label's
/// size is the em.
fn scale(font: &FontRef<'_>, size: f32) -> PxScale {
    let units = font.units_per_em().unwrap_or(2048.0);
    let height = font.ascent_unscaled() - font.descent_unscaled();
    PxScale::from(size * height / units)
}

/// Width of `text` in pixels.
pub fn width(text: &str, size: f32, bold: bool) -> f32 {
    let Some(font) = font(bold) else {
        return text.chars().count() as f32 * size * 0.6;
    };
    layout(font, text, size).1
}

/// Glyphs and their pen positions along the baseline, and the total advance.
fn layout(font: &FontRef<'_>, text: &str, size: f32) -> (Vec<(ab_glyph::GlyphId, f32)>, f32) {
    let scaled = font.as_scaled(scale(font, size));
    let mut pen = 0.0;
    let mut prev = None;
    let mut glyphs = Vec::new();
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(prev) = prev {
            pen += scaled.kern(prev, id);
        }
        glyphs.push((id, pen));
        pen += scaled.h_advance(id);
        prev = Some(id);
    }
    (glyphs, pen)
}

/// `text`, shortened with an ellipsis in the middle until it is at most
/// `max` pixels wide; empty if not even three characters fit.
pub fn fit(text: &str, size: f32, bold: bool, max: f32) -> String {
    if width(text, size, bold) <= max {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    for keep in (2..chars.len()).rev() {
        let head = keep.div_ceil(2);
        let candidate: String = chars[..head]
            .iter()
            .chain(std::iter::once(&'…'))
            .chain(&chars[chars.len() - (keep - head)..])
            .collect();
        if width(&candidate, size, bold) <= max {
            return candidate;
        }
    }
    String::new()
}

/// `text` cut at its end with an ellipsis to fit `max` pixels; empty if not
/// even its first character fits.
pub fn fit_end(text: &str, size: f32, max: f32) -> String {
    if width(text, size, false) <= max {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    for keep in (1..chars.len()).rev() {
        let candidate: String = chars[..keep].iter().chain(std::iter::once(&'…')).collect();
        if width(&candidate, size, false) <= max {
            return candidate;
        }
    }
    String::new()
}

/// Draws `label` into an RGB image `width` pixels wide, blending by glyph
/// coverage.
pub fn rasterise(pixels: &mut [u8], (width, height): (u32, u32), label: &Label) {
    let Some(font) = font(label.bold) else {
        return;
    };
    let px = scale(font, label.size);
    let scaled = font.as_scaled(px);
    let (glyphs, advance) = layout(font, &label.text, label.size);
    let (ascent, descent) = (scaled.ascent(), scaled.descent());
    // Text space: u along the baseline, v downwards, origin at the anchor.
    let u0 = match label.h {
        HPos::Left => 0.0,
        HPos::Center => -advance / 2.0,
        HPos::Right => -advance,
    };
    let top = match label.v {
        VPos::Top => 0.0,
        VPos::Center => -(ascent - descent) / 2.0,
        VPos::Bottom => -(ascent - descent),
    };
    let baseline = top + ascent;
    let (ax, ay) = (label.at.0 as f32, label.at.1 as f32);
    let RGBColor(r, g, b) = label.color;
    for (id, pen) in glyphs {
        let glyph = id.with_scale_and_position(px, point(u0 + pen, baseline));
        let Some(outline) = font.outline_glyph(glyph) else {
            continue;
        };
        let bounds = outline.px_bounds();
        outline.draw(|dx, dy, coverage| {
            let u = bounds.min.x + dx as f32;
            let v = bounds.min.y + dy as f32;
            let (x, y) = if label.vertical {
                (ax + v, ay - u)
            } else {
                (ax + u, ay + v)
            };
            let (x, y) = (x.floor() as i64, y.floor() as i64);
            if x < 0 || y < 0 || x >= i64::from(width) || y >= i64::from(height) {
                return;
            }
            let i = ((y as usize) * width as usize + x as usize) * 3;
            let a = coverage.clamp(0.0, 1.0);
            for (channel, value) in pixels[i..i + 3].iter_mut().zip([r, g, b]) {
                *channel = (f32::from(*channel) * (1.0 - a) + f32::from(value) * a).round() as u8;
            }
        });
    }
}

/// The same label as plotters' SVG text element.
pub fn svg_text(label: &Label) -> Text<'_, (i32, i32), String> {
    // NOTE: plotters' SVG backend writes `font-size` as the size / 1.24.
    let weight = if label.bold {
        FontStyle::Bold
    } else {
        FontStyle::Normal
    };
    let font = FontDesc::new(FontFamily::SansSerif, f64::from(label.size) * 1.24, weight);
    let mut style = TextStyle::from(font)
        .color(&label.color)
        .pos(Pos::new(label.h, label.v));
    if label.vertical {
        style = style.transform(FontTransform::Rotate270);
    }
    Text::new(label.text.clone(), label.at, style)
}
