//! Charts as PNG files for slides and papers: the report's own SVG drawn
//! by resvg at twice its size, with the system's fonts.

use resvg::{tiny_skia, usvg};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Pixels per SVG unit: 1280 × 680 for a chart.
const SCALE: f32 = 2.0;

fn fonts() -> Arc<usvg::fontdb::Database> {
    static FONTS: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = usvg::fontdb::Database::new();
            db.load_system_fonts();
            Arc::new(db)
        })
        .clone()
}

#[derive(Debug, thiserror::Error)]
pub enum PngError {
    #[error("chart `{name}`: the SVG does not parse: {message}")]
    Svg { name: String, message: String },
    #[error("chart `{name}`: {message}")]
    Render { name: String, message: String },
    #[error("{}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Whether any font was found: without one, charts draw without text.
pub fn have_fonts() -> bool {
    !fonts().is_empty()
}

/// `svg` as PNG bytes.
pub fn render(name: &str, svg: &str) -> Result<Vec<u8>, PngError> {
    let options = usvg::Options {
        fontdb: fonts(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options).map_err(|e| PngError::Svg {
        name: name.to_string(),
        message: e.to_string(),
    })?;
    let size = tree.size();
    let (width, height) = (
        (size.width() * SCALE).ceil() as u32,
        (size.height() * SCALE).ceil() as u32,
    );
    let mut pixmap = tiny_skia::Pixmap::new(width, height).ok_or_else(|| PngError::Render {
        name: name.to_string(),
        message: format!("cannot allocate {width}×{height} pixels"),
    })?;
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(SCALE, SCALE),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| PngError::Render {
        name: name.to_string(),
        message: e.to_string(),
    })
}

/// Writes `DIR/NAME.png` for each `(name, svg)`, creating `dir`; returns
/// the paths written. Every chart is drawn before the first file is
/// written, and each file is replaced whole.
pub fn write_all(dir: &Path, charts: &[(String, String)]) -> Result<Vec<PathBuf>, PngError> {
    let images = charts
        .iter()
        .map(|(name, svg)| Ok((name, render(name, svg)?)))
        .collect::<Result<Vec<_>, PngError>>()?;
    std::fs::create_dir_all(dir).map_err(|source| PngError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut written = Vec::new();
    for (name, bytes) in images {
        let path = dir.join(format!("{name}.png"));
        rtlab_core::fsutil::write_atomic_bytes(&path, &bytes).map_err(|source| PngError::Io {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}
