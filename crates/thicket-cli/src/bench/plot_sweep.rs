//! `thicket bench plot-sweep`: one metric of one workload against the data
//! set size (each run's `settings.num`, log scale) over several result
//! files, one line per engine/profile: YoDB's Figure 2 (throughput) and
//! Table 2 (write amplification) drawn from one `--json` file per size.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use plotters::prelude::*;

use super::plot::{draw_legend, draw_line, e, line_color, read_report, run_label, y_label};
use super::report::{workload_label, RunResult};

#[derive(Debug, Args)]
pub struct PlotSweepArgs {
    /// `--json` result files, one point per file and engine (typically one
    /// file per `--num`).
    #[arg(required = true, value_name = "FILE.json")]
    pub inputs: Vec<PathBuf>,
    /// The SVG to write.
    #[arg(short = 'o', long, value_name = "FILE.svg")]
    pub output: PathBuf,
    /// Plots this workload's runs.
    #[arg(long, value_name = "W")]
    pub workload: String,
    /// Only runs with this scan length (one of E's lengths when the files
    /// ran `--scan-length 10,100,1000`).
    #[arg(long, value_name = "L")]
    pub scan_length: Option<usize>,
    /// The y axis.
    #[arg(long, value_enum, default_value_t = Metric::OpsPerSec)]
    pub metric: Metric,
}

/// What the y axis shows: one figure of each run's JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum Metric {
    /// `ops_per_sec`.
    OpsPerSec,
    /// `device_write_amplification` (null without writes).
    DeviceWriteAmplification,
    /// `latency_by_op.get.p95` (null without gets or latencies).
    GetP95Us,
    /// `latency_by_op.put.p95` (null without puts or latencies).
    PutP95Us,
    /// `peak_space_amplification` (null in older reports).
    PeakSpaceAmplification,
}

impl Metric {
    pub(super) fn name(self) -> String {
        self.to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_string())
    }

    pub(super) fn of(self, r: &RunResult) -> Option<f64> {
        match self {
            Metric::OpsPerSec => Some(r.ops_per_sec),
            Metric::DeviceWriteAmplification => r.device_write_amplification,
            Metric::GetP95Us => r.latency_by_op.get("get").map(|l| l.p95),
            Metric::PutP95Us => r.latency_by_op.get("put").map(|l| l.p95),
            Metric::PeakSpaceAmplification => r.peak_space_amplification,
        }
    }

    pub(super) fn axis(self) -> &'static str {
        match self {
            Metric::OpsPerSec => "operations per second",
            Metric::DeviceWriteAmplification => "device write amplification",
            Metric::GetP95Us => "get p95 latency (µs)",
            Metric::PutP95Us => "put p95 latency (µs)",
            Metric::PeakSpaceAmplification => "peak space over the data",
        }
    }
}

/// One engine's points, sorted by keys.
struct Line {
    label: String,
    points: Vec<(f64, f64)>,
}

/// The lines of `runs` (each with the file it came from), in the order
/// their engines first appear; runs where the metric is null are left
/// out. Two runs of one engine at one size are an error: they would draw
/// a line back and forth.
fn lines(runs: &[(&Path, RunResult)], metric: Metric) -> Result<Vec<Line>, String> {
    let mut lines: Vec<Line> = Vec::new();
    let mut seen: BTreeMap<(String, u64), &Path> = BTreeMap::new();
    for (path, r) in runs {
        let label = run_label(r);
        let num = r.settings.num;
        if let Some(first) = seen.insert((label.clone(), num), path) {
            let files = if first == *path {
                format!("in {}", path.display())
            } else {
                format!("in {} and {}", first.display(), path.display())
            };
            return Err(format!(
                "two runs of {} by {label} at {num} keys {files}: plot one scan length \
                 (--scan-length) or distribution at a time",
                r.workload
            ));
        }
        let Some(value) = metric.of(r) else { continue };
        let point = (num as f64, value);
        match lines.iter_mut().find(|l| l.label == label) {
            Some(line) => line.points.push(point),
            None => lines.push(Line {
                label,
                points: vec![point],
            }),
        }
    }
    for line in &mut lines {
        line.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    Ok(lines)
}

pub fn plot_sweep(a: &PlotSweepArgs) -> Result<(), String> {
    let reports = a
        .inputs
        .iter()
        .map(|path| Ok((path.as_path(), read_report(path)?)))
        .collect::<Result<Vec<_>, String>>()?;
    let runs: Vec<(&Path, RunResult)> = reports
        .into_iter()
        .flat_map(|(path, report)| report.runs.into_iter().map(move |r| (path, r)))
        .filter(|(_, r)| r.workload == a.workload)
        .filter(|(_, r)| a.scan_length.is_none() || r.settings.scan_length == a.scan_length)
        .collect();
    let selection = match a.scan_length {
        Some(len) => format!("workload {:?} with scan length {len}", a.workload),
        None => format!("workload {:?}", a.workload),
    };
    if runs.is_empty() {
        return Err(format!("no runs of {selection} in the files given"));
    }
    let metric = a.metric.name();
    let lines = lines(&runs, a.metric)?;
    if lines.is_empty() {
        return Err(format!("{metric} is null in every run of {selection}"));
    }

    let mut sizes: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    let (min_x, max_x) = (sizes[0], sizes[sizes.len() - 1]);
    let max_y = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    // Headroom above the data for the legend, a row per line.
    let max_y = if max_y > 0.0 {
        max_y * (1.15 + 0.06 * lines.len() as f64)
    } else {
        1.0
    };
    // The caption names the distribution and scan length when all runs
    // share them.
    let title = match runs.split_first() {
        Some(((_, first), rest))
            if rest
                .iter()
                .all(|(_, r)| workload_label(r) == workload_label(first)) =>
        {
            workload_label(first)
        }
        _ => a.workload.clone(),
    };

    let root = SVGBackend::new(&a.output, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{title}: {metric} by data set size"),
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(
            (min_x / 1.4..max_x * 1.4)
                .log_scale()
                .with_key_points(sizes),
            0f64..max_y,
        )
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("keys (log scale)")
        .y_desc(a.metric.axis())
        .max_light_lines(0)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| y_label(max_y, *y))
        .draw()
        .map_err(e)?;
    for (i, line) in lines.iter().enumerate() {
        draw_line(&mut chart, i, line.label.clone(), line.points.clone())?;
        let color = line_color(i);
        chart
            .draw_series(
                line.points
                    .iter()
                    .map(|&p| Circle::new(p, 3, color.filled())),
            )
            .map_err(e)?;
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(e)?;
    Ok(())
}
