//! The PNG of commit-to-visible lag over time, one colour per load level.

use std::path::Path;

use anyhow::{Context, anyhow};
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

/// Debian's `fonts-dejavu-core`; the plot's text needs one TrueType font.
const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// One series: its legend and its points (seconds into the phase, lag in ms).
pub struct Series<'a> {
    pub label: String,
    pub points: &'a [(f64, f64)],
}

pub fn lag_over_time(path: &Path, title: &str, series: &[Series<'_>]) -> anyhow::Result<()> {
    let font = std::fs::read(FONT)
        .with_context(|| format!("reading {FONT} (apt-get install fonts-dejavu-core)"))?;
    // plotters keeps registered fonts for the life of the process.
    register_font(
        "sans-serif",
        FontStyle::Normal,
        Box::leak(font.into_boxed_slice()),
    )
    .map_err(|_| anyhow!("{FONT} is not a usable font"))?;
    let all = || series.iter().flat_map(|s| s.points.iter());
    let x_max = all().map(|p| p.0).fold(1.0, f64::max);
    // The scale follows the bulk, not one outlier: the 99.9th percentile, with headroom.
    let mut lags: Vec<f64> = all().map(|p| p.1).collect();
    lags.sort_by(f64::total_cmp);
    let y_max = crate::load::percentile(&lags, 0.999).max(1.0) * 1.2;

    let root = BitMapBackend::new(path, (1200, 600)).into_drawing_area();
    let draw = |e: DrawingAreaErrorKind<_>| anyhow!("drawing {}: {e}", path.display());
    root.fill(&WHITE).map_err(draw)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        .map_err(draw)?;
    chart
        .configure_mesh()
        .x_desc("seconds into the steady load")
        .y_desc("commit to visible in Redis (ms)")
        .draw()
        .map_err(draw)?;
    let colours = [BLUE, GREEN, RED, MAGENTA, CYAN];
    for (s, colour) in series.iter().zip(colours.iter().cycle()) {
        let colour = *colour;
        chart
            .draw_series(
                s.points
                    .iter()
                    .filter(|p| p.1 <= y_max)
                    .map(move |&p| Circle::new(p, 1, colour.mix(0.5).filled())),
            )
            .map_err(draw)?
            .label(s.label.clone())
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(draw)?;
    root.present().map_err(draw)?;
    Ok(())
}
