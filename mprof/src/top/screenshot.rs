//! A PNG of `mprof top`'s screen, for the documentation (`docs/top.png`):
//! ratatui's test backend's cells drawn in DejaVu Sans Mono (embedded, as
//! the plots' text is) with ab_glyph, light on dark, honouring bold, dim
//! and reversed cells. Test-only: nothing of it is in the binary.
//!
//! Regenerate from two snapshots of a running program:
//!
//! ```sh
//! MEMPROF_LIVE=1 MEMPROF_REPORT=off cargo run --example service &
//! mprof snapshot $! -o a.json; sleep 1; mprof snapshot $! -o b.json
//! MPROF_TOP_SNAPSHOTS=a.json,b.json cargo test -p mprof --bin mprof \
//!     write_top_png -- --ignored
//! ```

use super::app::App;
use super::model::Snapshot;
use ab_glyph::{Font, FontRef, PxScale, ScaleFont, point};
use ratatui::buffer::Buffer;
use ratatui::style::Modifier;

const CELL_WIDTH: u32 = 9;
const CELL_HEIGHT: u32 = 18;
const FONT_SIZE: f32 = 15.0;
const BACKGROUND: [u8; 3] = [30, 30, 36];
const FOREGROUND: [u8; 3] = [220, 220, 214];
const DIM: [u8; 3] = [130, 130, 130];

/// The buffer as an RGB image: its width, height and pixels.
fn raster(buffer: &Buffer) -> (u32, u32, Vec<u8>) {
    let regular = FontRef::try_from_slice(dejavu::sans_mono::regular()).unwrap();
    let bold = FontRef::try_from_slice(dejavu::sans_mono::bold()).unwrap();
    let (width, height) = (
        u32::from(buffer.area.width) * CELL_WIDTH,
        u32::from(buffer.area.height) * CELL_HEIGHT,
    );
    let mut pixels: Vec<u8> = BACKGROUND
        .iter()
        .copied()
        .cycle()
        .take((width * height * 3) as usize)
        .collect();
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            let cell = &buffer[(x, y)];
            let modifier = cell.modifier;
            let (mut ink, mut paper) = match modifier.contains(Modifier::DIM) {
                true => (DIM, BACKGROUND),
                false => (FOREGROUND, BACKGROUND),
            };
            if modifier.contains(Modifier::REVERSED) {
                std::mem::swap(&mut ink, &mut paper);
            }
            let (left, top) = (u32::from(x) * CELL_WIDTH, u32::from(y) * CELL_HEIGHT);
            for py in top..top + CELL_HEIGHT {
                for px in left..left + CELL_WIDTH {
                    let at = ((py * width + px) * 3) as usize;
                    pixels[at..at + 3].copy_from_slice(&paper);
                }
            }
            let Some(c) = cell.symbol().chars().next().filter(|c| *c != ' ') else {
                continue;
            };
            let font = match modifier.contains(Modifier::BOLD) {
                true => &bold,
                false => &regular,
            };
            let scaled = font.as_scaled(PxScale::from(FONT_SIZE));
            let baseline =
                top as f32 + scaled.ascent() + (CELL_HEIGHT as f32 - scaled.height()) / 2.0;
            let glyph = scaled.scaled_glyph(c);
            let glyph = ab_glyph::Glyph {
                position: point(left as f32, baseline),
                ..glyph
            };
            let Some(outline) = font.outline_glyph(glyph) else {
                continue;
            };
            let bounds = outline.px_bounds();
            outline.draw(|dx, dy, coverage| {
                let px = bounds.min.x as i64 + i64::from(dx);
                let py = bounds.min.y as i64 + i64::from(dy);
                if px < 0 || py < 0 || px >= i64::from(width) || py >= i64::from(height) {
                    return;
                }
                let at = ((py as u32 * width + px as u32) * 3) as usize;
                for i in 0..3 {
                    let blend =
                        f32::from(paper[i]) * (1.0 - coverage) + f32::from(ink[i]) * coverage;
                    pixels[at + i] = blend.round() as u8;
                }
            });
        }
    }
    (width, height, pixels)
}

fn png(buffer: &Buffer) -> Vec<u8> {
    let (width, height, pixels) = raster(buffer);
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().unwrap();
    writer.write_image_data(&pixels).unwrap();
    writer.finish().unwrap();
    bytes
}

fn screen(app: &App, width: u16, height: u16) -> Buffer {
    let backend = ratatui::backend::TestBackend::new(width, height);
    let mut terminal = ratatui::Terminal::new(backend).unwrap();
    terminal
        .draw(|frame| super::view::draw(frame, app))
        .unwrap();
    terminal.backend().buffer().clone()
}

#[test]
fn a_screenshot_has_one_cell_per_character() {
    let mut app = App::default();
    app.update(super::model::tests::snapshot(
        1000.0,
        &[("app::grow", 1, 8, 8, 1)],
    ));
    let bytes = png(&screen(&app, 40, 5));
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let reader = decoder.read_info().unwrap();
    let info = reader.info();
    assert_eq!(
        (info.width, info.height),
        (40 * CELL_WIDTH, 5 * CELL_HEIGHT)
    );
}

#[test]
#[ignore = "writes docs/top.png from MPROF_TOP_SNAPSHOTS (see the module's header)"]
fn write_top_png() {
    let files = std::env::var("MPROF_TOP_SNAPSHOTS").expect("MPROF_TOP_SNAPSHOTS=a.json,b.json");
    let mut app = App::default();
    for file in files.split(',') {
        let text = std::fs::read_to_string(file).unwrap();
        app.update(Snapshot::parse(&text).unwrap());
    }
    let height = (app.rows.len() + 5).max(12) as u16;
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/top.png");
    std::fs::write(&out, png(&screen(&app, 96, height))).unwrap();
    print!("{}", super::view::frame_text(&app, 96, height));
}
