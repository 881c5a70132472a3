//! `thicket bench plot`: throughput over time (top; the readers' only when
//! a writer thread ran), the block-cache hit ratio over time (middle, when
//! recorded) and latency CDFs (bottom), one line per run of one workload
//! (labelled engine/profile), as SVG.

use std::path::Path;

use plotters::coord::CoordTranslate;
use plotters::prelude::*;

use super::report::{Report, RunResult};

/// A plotting error as the command's message.
pub(super) fn e(err: impl std::fmt::Display) -> String {
    err.to_string()
}

/// Reads a `--json` result file; errors name the file.
pub(super) fn read_report(path: &Path) -> Result<Report, String> {
    let text = std::fs::read_to_string(path).map_err(|err| format!("{}: {err}", path.display()))?;
    serde_json::from_str(&text).map_err(|err| format!("{}: {err}", path.display()))
}

/// A run's line label: the engine, `engine/profile` for ThicketDB.
pub(super) fn run_label(r: &RunResult) -> String {
    match &r.profile {
        Some(p) => format!("{}/{p}", r.engine),
        None => r.engine.clone(),
    }
}

/// A y-axis label: whole numbers on an axis that reaches 100, one decimal
/// below.
pub(super) fn y_label(max_y: f64, y: f64) -> String {
    if max_y >= 100.0 {
        format!("{y:.0}")
    } else {
        format!("{y:.1}")
    }
}

/// The colour of the `index`th line of a chart.
pub(super) fn line_color(index: usize) -> RGBAColor {
    // Palette99 without its pale yellow (index 2), unreadable on white.
    let skip_yellow = if index >= 2 { index + 1 } else { index };
    Palette99::pick(skip_yellow).to_rgba()
}

/// Draws the `index`th line of a chart, with its legend entry.
pub(super) fn draw_line<DB, CT>(
    chart: &mut ChartContext<'_, DB, CT>,
    index: usize,
    label: String,
    points: impl IntoIterator<Item = (f64, f64)>,
) -> Result<(), String>
where
    DB: DrawingBackend,
    CT: CoordTranslate<From = (f64, f64)>,
{
    let color = line_color(index);
    chart
        .draw_series(LineSeries::new(points, color.stroke_width(2)))
        .map_err(e)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    Ok(())
}

/// Draws the legend of a chart's lines at `position`.
pub(super) fn draw_legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(position)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(e)
}

pub fn plot(input: &Path, output: &Path, workload: Option<&str>) -> Result<(), String> {
    let report = read_report(input)?;
    let workload = workload
        .map(str::to_string)
        .or_else(|| report.runs.first().map(|r| r.workload.clone()))
        .ok_or("the result has no runs")?;
    let runs: Vec<&RunResult> = report
        .runs
        .iter()
        .filter(|r| r.workload == workload)
        .collect();
    if runs.is_empty() {
        return Err(format!("no runs of workload {workload:?}"));
    }
    let with_hit_ratio = runs
        .iter()
        .any(|r| r.hit_ratio_timeline.iter().any(Option::is_some));
    let height = if with_hit_ratio { 1350 } else { 900 };
    let root = SVGBackend::new(output, (1000, height)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let (top, rest) = root.split_vertically(450);
    let (middle, bottom) = if with_hit_ratio {
        rest.split_vertically(450)
    } else {
        rest.split_vertically(0)
    };
    let series = |r: &RunResult| -> Vec<u64> {
        if r.reader_timeline.is_empty() {
            r.timeline.clone()
        } else {
            r.reader_timeline.clone()
        }
    };

    let max_secs = runs
        .iter()
        .map(|r| r.timeline.len())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let max_rate = runs
        .iter()
        .flat_map(|r| series(r))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let mut chart = ChartBuilder::on(&top)
        .caption(
            format!("{workload}: throughput over time"),
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..max_secs, 0f64..max_rate * 1.1)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("ops/s (readers' only when a writer ran)")
        .draw()
        .map_err(e)?;
    for (i, r) in runs.iter().enumerate() {
        let points = series(r)
            .into_iter()
            .enumerate()
            .map(|(s, v)| (s as f64 + 1.0, v as f64));
        draw_line(&mut chart, i, run_label(r), points)?;
    }
    draw_legend(&mut chart, SeriesLabelPosition::MiddleRight)?;

    if with_hit_ratio {
        let mut chart = ChartBuilder::on(&middle)
            .caption(
                format!("{workload}: block-cache hit ratio per second"),
                ("sans-serif", 22),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..max_secs, 0f64..100f64)
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("seconds")
            .y_desc("hit ratio (%)")
            .draw()
            .map_err(e)?;
        for (i, r) in runs.iter().enumerate() {
            let points = r
                .hit_ratio_timeline
                .iter()
                .enumerate()
                .filter_map(|(s, v)| v.map(|v| (s as f64 + 1.0, v * 100.0)));
            draw_line(&mut chart, i, run_label(r), points)?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    }

    let max_us = runs
        .iter()
        .flat_map(|r| r.latency_cdf.iter().map(|&(_, us)| us))
        .fold(1.0f64, f64::max);
    let mut chart = ChartBuilder::on(&bottom)
        .caption(
            format!("{workload}: latency CDF (all operations)"),
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d((0.1f64..max_us * 1.5).log_scale(), 0f64..100f64)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("latency (µs, log scale)")
        .y_desc("percentile")
        .draw()
        .map_err(e)?;
    for (i, r) in runs.iter().enumerate() {
        let points = r
            .latency_cdf
            .iter()
            .map(|&(q, us)| (us.max(0.1), q * 100.0));
        draw_line(&mut chart, i, run_label(r), points)?;
    }
    draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    root.present().map_err(e)?;
    Ok(())
}
