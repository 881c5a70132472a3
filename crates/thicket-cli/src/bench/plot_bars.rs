//! `thicket bench plot-bars`: one metric as grouped bars, the shape of
//! most of the papers' figures (TRIAD's Figures 9-11, BoLT's Figure 12,
//! SifrDB's Figure 8). Each input is a `--json` result file with an
//! optional group and series name, so runs of one engine from several
//! files (one file per configuration step, per memory cap) can stand side
//! by side.

use std::path::PathBuf;

use clap::Args;
use plotters::prelude::*;

use super::plot::{e, line_color, read_report, run_label, y_label};
use super::plot_sweep::Metric;
use super::report::RunResult;

#[derive(Debug, Args)]
pub struct PlotBarsArgs {
    /// Result files: `FILE.json`, optionally followed by `,group=G`
    /// (the x-axis group of its runs; default: the run's workload;
    /// `{workload}` and `{scan_length}` in G are replaced by the run's)
    /// and `,series=S` (the bar's name; default: the run's
    /// engine/profile).
    #[arg(required = true, value_name = "FILE.json[,group=G][,series=S]")]
    pub inputs: Vec<String>,
    /// The SVG to write.
    #[arg(short = 'o', long, value_name = "FILE.svg")]
    pub output: PathBuf,
    /// Only runs of these workloads (repeatable; default: all).
    #[arg(long, value_name = "W")]
    pub workload: Vec<String>,
    /// The y axis.
    #[arg(long, value_enum, default_value_t = Metric::OpsPerSec)]
    pub metric: Metric,
    /// The chart's caption (default: the metric's name).
    #[arg(long)]
    pub title: Option<String>,
}

/// One input: a result file and how its runs are placed.
#[derive(Debug, PartialEq)]
struct Input {
    path: PathBuf,
    group: Option<String>,
    series: Option<String>,
}

fn parse_input(spec: &str) -> Result<Input, String> {
    let mut parts = spec.split(',');
    let path = PathBuf::from(parts.next().unwrap_or_default());
    let mut input = Input {
        path,
        group: None,
        series: None,
    };
    for part in parts {
        match part.split_once('=') {
            Some(("group", g)) => input.group = Some(g.to_string()),
            Some(("series", s)) => input.series = Some(s.to_string()),
            _ => {
                return Err(format!(
                    "{spec:?}: expected FILE.json[,group=G][,series=S], not {part:?}"
                ))
            }
        }
    }
    Ok(input)
}

/// The bars: groups (x) in order of first appearance, series likewise,
/// and each (group, series) value.
#[derive(Debug, Default)]
struct Bars {
    groups: Vec<String>,
    series: Vec<String>,
    values: Vec<(usize, usize, f64)>,
}

impl Bars {
    fn index(names: &mut Vec<String>, name: &str) -> usize {
        names.iter().position(|n| n == name).unwrap_or_else(|| {
            names.push(name.to_string());
            names.len() - 1
        })
    }

    /// Adds a run's bar; two runs for one bar are an error (one would hide
    /// the other).
    fn add(&mut self, group: &str, series: &str, value: f64) -> Result<(), String> {
        let g = Self::index(&mut self.groups, group);
        let s = Self::index(&mut self.series, series);
        if self.values.iter().any(|&(vg, vs, _)| (vg, vs) == (g, s)) {
            return Err(format!(
                "two runs for the bar of {series:?} in group {group:?}: name them apart \
                 with ,group= or ,series=, or select one --workload"
            ));
        }
        self.values.push((g, s, value));
        Ok(())
    }
}

fn collect(a: &PlotBarsArgs) -> Result<Bars, String> {
    let mut bars = Bars::default();
    let mut matched = 0;
    for spec in &a.inputs {
        let input = parse_input(spec)?;
        let report = read_report(&input.path)?;
        let runs = report
            .runs
            .iter()
            .filter(|r| a.workload.is_empty() || a.workload.contains(&r.workload));
        for r in runs {
            matched += 1;
            let Some(value) = a.metric.of(r) else {
                continue;
            };
            bars.add(&group_of(&input, r), &series_of(&input, r), value)?;
        }
    }
    let metric = a.metric.name();
    if matched == 0 {
        return Err("no runs of the selected workloads in the files given".to_string());
    }
    if bars.values.is_empty() {
        return Err(format!("{metric} is null in every selected run"));
    }
    Ok(bars)
}

fn group_of(input: &Input, r: &RunResult) -> String {
    match &input.group {
        Some(g) => g.replace("{workload}", &r.workload).replace(
            "{scan_length}",
            &r.settings
                .scan_length
                .map_or_else(String::new, |l| l.to_string()),
        ),
        None => r.workload.clone(),
    }
}

fn series_of(input: &Input, r: &RunResult) -> String {
    input.series.clone().unwrap_or_else(|| run_label(r))
}

pub fn plot_bars(a: &PlotBarsArgs) -> Result<(), String> {
    let bars = collect(a)?;
    let max_y = bars.values.iter().map(|v| v.2).fold(0.0, f64::max);
    // Headroom above the bars for the legend, a row per series.
    let max_y = if max_y > 0.0 {
        max_y * (1.15 + 0.07 * bars.series.len() as f64)
    } else {
        1.0
    };
    let groups = bars.groups.len();
    let width = (groups as u32 * (bars.series.len() as u32 * 22 + 40)).clamp(640, 1600);
    let root = SVGBackend::new(&a.output, (width, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let caption = a.title.clone().unwrap_or_else(|| a.metric.name());
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..groups as f64, 0f64..max_y)
        .map_err(e)?;
    let names = bars.groups.clone();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(groups * 2 + 1)
        .x_label_formatter(&|x| {
            // Labels at the groups' centres only.
            let centre = x - 0.5;
            if (centre - centre.round()).abs() < 1e-6 && centre >= 0.0 {
                names
                    .get(centre.round() as usize)
                    .cloned()
                    .unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(a.metric.axis())
        .y_label_formatter(&|y| y_label(max_y, *y))
        .draw()
        .map_err(e)?;
    // Each group's bars fill 80% of its slot, in series order.
    let width = 0.8 / bars.series.len() as f64;
    for (s, name) in bars.series.iter().enumerate() {
        let color = line_color(s);
        let rects = bars
            .values
            .iter()
            .filter(|v| v.1 == s)
            .map(|&(g, _, value)| {
                let left = g as f64 + 0.1 + s as f64 * width;
                Rectangle::new([(left, 0.0), (left + width, value)], color.filled())
            })
            .collect::<Vec<_>>();
        chart
            .draw_series(rects)
            .map_err(e)?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_name_their_group_and_series() {
        assert_eq!(
            parse_input("a.json,group=64M,series=sifr parallel").unwrap(),
            Input {
                path: "a.json".into(),
                group: Some("64M".into()),
                series: Some("sifr parallel".into()),
            }
        );
        assert_eq!(parse_input("a.json").unwrap().group, None);
        let err = parse_input("a.json,colour=red").unwrap_err();
        assert!(err.contains("colour=red"), "{err}");
    }

    #[test]
    fn a_bar_has_one_run() {
        let mut bars = Bars::default();
        bars.add("ws1", "rocksdb", 1.0).unwrap();
        bars.add("ws3", "rocksdb", 2.0).unwrap();
        bars.add("ws1", "thicket/triad", 3.0).unwrap();
        assert_eq!(bars.groups, ["ws1", "ws3"]);
        assert_eq!(bars.series, ["rocksdb", "thicket/triad"]);
        let err = bars.add("ws3", "rocksdb", 4.0).unwrap_err();
        assert!(err.contains("\"ws3\""), "{err}");
    }
}
