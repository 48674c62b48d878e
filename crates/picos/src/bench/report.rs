//! The outputs of `picos bench`: the Markdown tables (as the seeds'), the
//! JSON record of every sample, the SVG chart of overheads, and the
//! comparison with an earlier run.
//!
//! **Overhead** is `cost ratio − 1`, where the cost ratio is column/native
//! for latencies and native/column for bandwidths and throughputs (so it is
//! always "how much more time the same work takes"; negative = faster). It
//! is the geometric mean of the per-round paired ratios, with a 95% t
//! interval on the log scale ([`stats::paired_log_ratio`]).

use super::stats::{self, Ratio, Summary};
use super::{Group, Launch, RowResult, RunInfo, Unit, CONFIGS};
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::path::Path;

/// Decimals that show three significant digits of `x` (at most 5).
fn decimals(x: f64) -> usize {
    if x == 0.0 || !x.is_finite() {
        return 0;
    }
    (2 - x.abs().log10().floor() as i32).clamp(0, 5) as usize
}

/// "mean ± ci" in the unit shown: three significant digits of the mean,
/// and at least one of the interval.
fn mean_ci(s: &Summary, unit: Unit) -> String {
    let (m, c) = (s.mean * unit.scale(), s.ci95 * unit.scale());
    let d = if c > 0.0 && c.is_finite() {
        decimals(m).max((-c.log10().floor() as i32).clamp(0, 5) as usize)
    } else {
        decimals(m)
    };
    if c.is_finite() {
        format!("{m:.d$} ± {c:.d$}")
    } else {
        format!("{m:.d$}")
    }
}

/// An overhead in percent with its interval: "+12.3% [+10.1, +14.6]".
fn overhead(r: Ratio) -> String {
    let pct = |x: f64| (x - 1.0) * 100.0;
    let d = if pct(r.est).abs() < 100.0 { 1 } else { 0 };
    format!(
        "{:+.d$}% [{:+.d$}, {:+.d$}]",
        pct(r.est),
        pct(r.lo),
        pct(r.hi)
    )
}

/// The cost ratio of column `c` of `row` against the baseline (column 0).
pub fn cost_ratio(row: &RowResult, c: usize) -> Option<Ratio> {
    let (cell, base) = (&row.cells[c], &row.cells[0]);
    if cell.error.is_some() || base.error.is_some() {
        return None;
    }
    let r = stats::paired_log_ratio(&cell.samples, &base.samples)?;
    Some(if row.spec.unit.higher_is_better() {
        r.inverse()
    } else {
        r
    })
}

fn summary(row: &RowResult, c: usize) -> Option<Summary> {
    stats::summarize(&row.cells[c].samples)
}

/// The Markdown report: one table per group of rows, then notes.
pub fn markdown(results: &[RowResult], info: &RunInfo) -> String {
    let mut out = String::new();
    let mut failures = Vec::new();
    for group in [Group::Syscalls, Group::Files, Group::Preempt] {
        let rows: Vec<&RowResult> = results.iter().filter(|r| r.spec.group == group).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n### {}\n", group.title());
        let mut head = String::from("| test |");
        let mut rule = String::from("|---|");
        for (i, c) in CONFIGS.iter().enumerate() {
            let _ = write!(head, " {} |", c.name);
            rule.push_str("---:|");
            if i > 0 && c.launch != Launch::NotImplemented {
                head.push_str(" overhead |");
                rule.push_str("---:|");
            }
        }
        head.push_str(" outliers |");
        rule.push_str("---|");
        let _ = writeln!(out, "{head}\n{rule}");
        for row in rows {
            let unit = row.spec.unit;
            let _ = write!(out, "| {} ({}) |", row.spec.label, unit.shown());
            let mut outliers = Vec::new();
            for (i, c) in CONFIGS.iter().enumerate() {
                if c.launch == Launch::NotImplemented {
                    out.push_str(" n/a (not implemented) |");
                    continue;
                }
                if !crate::bench::runs(c, row.spec) {
                    out.push_str(" n/a |");
                    if i > 0 {
                        out.push_str(" – |");
                    }
                    continue;
                }
                let cell = &row.cells[i];
                if let Some(e) = &cell.error {
                    failures.push(format!("{} in {}: {e}", row.spec.key, c.name));
                }
                match (summary(row, i), &cell.error) {
                    (_, Some(_)) => out.push_str(" failed |"),
                    (Some(s), None) => {
                        let _ = write!(out, " {} |", mean_ci(&s, unit));
                        outliers.push(s.outliers.to_string());
                    }
                    (None, None) => out.push_str(" – |"),
                }
                if i > 0 {
                    match cost_ratio(row, i) {
                        Some(r) => {
                            let _ = write!(out, " {} |", overhead(r));
                        }
                        None => out.push_str(" – |"),
                    }
                }
            }
            let _ = writeln!(out, " {} |", outliers.join("/"));
        }
    }
    let measured: Vec<&str> = CONFIGS
        .iter()
        .filter(|c| c.launch != Launch::NotImplemented)
        .map(|c| c.name)
        .collect();
    let _ = writeln!(
        out,
        "\n{} samples per cell; each sample is one timed loop in the guest, sized to last \
         ≥ {} ms natively. Mean ± 95% CI (Student's t). Latency in µs (lower is better); \
         bandwidth in MB/s (MB = 2^20 B) and throughput in ops/s (higher is better). \
         Overhead: cost ratio to native − 1 (for MB/s and ops/s: native/column), negative = \
         faster; geometric mean of the per-round paired ratios, 95% CI. Outliers: samples \
         beyond Tukey's fences (1.5 IQR), per column ({}); they are kept in every statistic.",
        info.samples,
        info.target_ns / 1e6,
        measured.join("/")
    );
    let _ = writeln!(
        out,
        "\n{}; {}, {} CPUs{}; files in {}; load average {} at the start, {} at the end; \
         {:.0} s.",
        info.date_utc,
        info.kernel,
        info.cpus,
        info.pin
            .map(|c| format!(", pinned to CPU {c}"))
            .unwrap_or_default(),
        info.files_dir,
        info.load_start,
        info.load_end,
        info.duration_s
    );
    for f in &failures {
        let _ = writeln!(out, "\n**failed**: {f}");
    }
    out
}

/// The JSON record (format `picos-bench/1`): the run, the columns, and per
/// row every sample of every column with its statistics. Numbers that are
/// not finite are written as `null`.
#[derive(Serialize)]
struct Record<'a> {
    format: &'static str,
    picos_version: &'static str,
    command: &'a str,
    date_utc: &'a str,
    started_unix_s: u64,
    duration_s: f64,
    quick: bool,
    samples: usize,
    target_loop_ns: f64,
    pin: Option<usize>,
    host: Host<'a>,
    columns: Vec<ColumnRecord>,
    rows: Vec<RowRecord<'a>>,
}

#[derive(Serialize)]
struct Host<'a> {
    kernel: &'a str,
    cpu: &'a str,
    cpus: usize,
    load_start: &'a str,
    load_end: &'a str,
    files_dir: &'a str,
}

/// One entry of [`CONFIGS`]: `picos_args` is `null` for the guest run
/// directly (native, native+SUD), absent
/// (with `why`) for a column that is not implemented.
#[derive(Serialize)]
struct ColumnRecord {
    name: &'static str,
    available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    picos_args: Option<Option<&'static [&'static str]>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<&'static str>,
    /// Environment the guest runs with (`native+SUD`).
    #[serde(skip_serializing_if = "Option::is_none")]
    guest_env: Option<&'static str>,
}

#[derive(Serialize)]
struct RowRecord<'a> {
    key: &'static str,
    label: &'static str,
    unit: &'static str,
    better: &'static str,
    group: &'static str,
    iters: u64,
    round_orders: Vec<Vec<&'static str>>,
    columns: Vec<CellRecord<'a>>,
}

/// One measured column of a row. The statistics are there when it has
/// samples; `cost_ratio` and `overhead_pct` on every column but native
/// (`null` when there is no ratio).
#[derive(Serialize)]
struct CellRecord<'a> {
    name: &'static str,
    error: Option<&'a str>,
    samples: &'a [f64],
    elapsed_ns: &'a [f64],
    #[serde(flatten)]
    stats: Option<StatsRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_ratio: Option<Option<Ratio>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    overhead_pct: Option<Option<f64>>,
}

#[derive(Serialize)]
struct StatsRecord {
    mean: f64,
    ci95: f64,
    sd: f64,
    median: f64,
    min: f64,
    max: f64,
    outliers: usize,
}

/// The JSON record of a run (see [`Record`]), pretty-printed.
pub fn json(results: &[RowResult], info: &RunInfo) -> String {
    let columns = CONFIGS
        .iter()
        .map(|c| ColumnRecord {
            name: c.name,
            available: c.launch != Launch::NotImplemented,
            picos_args: match c.launch {
                Launch::Native | Launch::NativeSud => Some(None),
                Launch::Picos(a) => Some(Some(a)),
                Launch::PicosMounts => Some(Some(&["-m", "MOUNTS"])),
                Launch::PicosCache => Some(Some(&["-m", "CACHE"])),
                Launch::PicosWriteBack => Some(Some(&["-m", "WRITEBACK"])),
                Launch::PicosTmpfs => Some(Some(&["-m", "TMPFS"])),
                Launch::PicosSandbox => Some(Some(&["-m", "SANDBOX"])),
                Launch::NotImplemented => None,
            },
            why: (c.launch == Launch::NotImplemented).then_some("not implemented"),
            guest_env: (c.launch == Launch::NativeSud).then_some("PICOS_BENCH_SUD=1"),
        })
        .collect();
    let rows = results
        .iter()
        .map(|row| RowRecord {
            key: row.spec.key,
            label: row.spec.label,
            unit: row.spec.unit.guest_name(),
            better: if row.spec.unit.higher_is_better() {
                "higher"
            } else {
                "lower"
            },
            group: row.spec.group.key(),
            iters: row.iters,
            round_orders: row
                .orders
                .iter()
                .map(|o| o.iter().map(|&c| CONFIGS[c].name).collect())
                .collect(),
            // The columns that measure this row.
            columns: CONFIGS
                .iter()
                .enumerate()
                .filter(|(_, c)| crate::bench::runs(c, row.spec))
                .map(|(i, c)| {
                    let cell = &row.cells[i];
                    let ratio = (i > 0).then(|| cost_ratio(row, i));
                    CellRecord {
                        name: c.name,
                        error: cell.error.as_deref(),
                        samples: &cell.samples,
                        elapsed_ns: &cell.elapsed_ns,
                        stats: summary(row, i).map(|st| StatsRecord {
                            mean: st.mean,
                            ci95: st.ci95,
                            sd: st.sd,
                            median: st.median,
                            min: st.min,
                            max: st.max,
                            outliers: st.outliers,
                        }),
                        cost_ratio: ratio,
                        overhead_pct: ratio.map(|r| r.map(|r| (r.est - 1.0) * 100.0)),
                    }
                })
                .collect(),
        })
        .collect();
    let record = Record {
        format: FORMAT,
        picos_version: env!("CARGO_PKG_VERSION"),
        command: &info.command,
        date_utc: &info.date_utc,
        started_unix_s: info.started_unix_s,
        duration_s: info.duration_s,
        quick: info.quick,
        samples: info.samples,
        target_loop_ns: info.target_ns,
        pin: info.pin,
        host: Host {
            kernel: &info.kernel,
            cpu: &info.cpu,
            cpus: info.cpus,
            load_start: &info.load_start,
            load_end: &info.load_end,
            files_dir: &info.files_dir,
        },
        columns,
        rows,
    };
    let mut text =
        serde_json::to_string_pretty(&record).expect("the bench record serializes to JSON");
    text.push('\n');
    text
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A horizontal bar chart of the overheads: one group of bars per row, one
/// bar per picos column, on a log2 scale of the cost ratio centred on
/// native (0%), with 95% CI whiskers.
pub fn svg(results: &[RowResult], info: &RunInfo) -> String {
    const COLORS: [&str; 5] = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#aa3377"];
    let cols: Vec<usize> = (1..CONFIGS.len())
        .filter(|&i| {
            matches!(
                CONFIGS[i].launch,
                Launch::Picos(_)
                    | Launch::PicosMounts
                    | Launch::PicosCache
                    | Launch::PicosWriteBack
            )
        })
        .collect();
    let ratios: Vec<Vec<Option<Ratio>>> = results
        .iter()
        .map(|r| cols.iter().map(|&c| cost_ratio(r, c)).collect())
        .collect();
    let (mut lo, mut hi) = (-1.0f64, 1.0f64);
    for r in ratios.iter().flatten().flatten() {
        for v in [r.lo, r.hi, r.est] {
            if v.is_finite() && v > 0.0 {
                lo = lo.min(v.log2());
                hi = hi.max(v.log2());
            }
        }
    }
    let (lo, hi) = (lo.floor().max(-8.0), hi.ceil().min(16.0));
    let (width, left, right, top) = (980.0, 300.0, 70.0, 78.0);
    let (bar_h, row_gap, group_h) = (9.0, 7.0, 26.0);
    let x = |l2: f64| left + (l2.clamp(lo, hi) - lo) / (hi - lo) * (width - left - right);
    let row_h = bar_h * cols.len() as f64 + row_gap;
    let groups: Vec<Group> = [Group::Syscalls, Group::Files, Group::Preempt]
        .into_iter()
        .filter(|g| results.iter().any(|r| r.spec.group == *g))
        .collect();
    let height = top + groups.len() as f64 * group_h + results.len() as f64 * row_h + 30.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width} {height:.0}\" font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(out, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        out,
        "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">picos bench: overhead vs native \
         (log scale; whiskers: 95% CI)</text>"
    );
    let _ = writeln!(
        out,
        "<text x=\"10\" y=\"37\" fill=\"#555\">{} · {} samples per cell · {} · load {} → {}</text>",
        xml(&info.date_utc),
        info.samples,
        xml(&info.kernel),
        xml(&info.load_start),
        xml(&info.load_end)
    );
    // Legend.
    let mut lx = 10.0;
    for (k, &c) in cols.iter().enumerate() {
        let _ = writeln!(
            out,
            "<rect x=\"{lx}\" y=\"46\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"55\">{}</text>",
            COLORS[k % COLORS.len()],
            lx + 14.0,
            xml(CONFIGS[c].name)
        );
        lx += 24.0 + 7.0 * CONFIGS[c].name.len() as f64;
    }
    for c in CONFIGS
        .iter()
        .filter(|c| c.launch == Launch::NotImplemented)
    {
        let _ = writeln!(
            out,
            "<text x=\"{lx}\" y=\"55\" fill=\"#888\">{}: n/a (not implemented)</text>",
            xml(c.name)
        );
        lx += 200.0;
    }
    // Grid: one line per power of two of the cost ratio.
    let plot_bottom = height - 30.0;
    let step = if hi - lo > 12.0 { 2 } else { 1 };
    let mut k = lo as i32;
    while k as f64 <= hi {
        let px = x(k as f64);
        let pct = (2f64.powi(k) - 1.0) * 100.0;
        let _ = writeln!(
            out,
            "<line x1=\"{px:.1}\" y1=\"{}\" x2=\"{px:.1}\" y2=\"{plot_bottom}\" stroke=\"{}\"/>\
             <text x=\"{px:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">{:+.0}%</text>",
            top - 8.0,
            if k == 0 { "#000" } else { "#ddd" },
            plot_bottom + 14.0,
            pct
        );
        k += step;
    }
    let mut y = top;
    for g in groups {
        let _ = writeln!(
            out,
            "<text x=\"10\" y=\"{:.1}\" font-weight=\"bold\">{}</text>",
            y + 16.0,
            g.title()
        );
        y += group_h;
        for (ri, row) in results
            .iter()
            .enumerate()
            .filter(|(_, r)| r.spec.group == g)
        {
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                left - 8.0,
                y + row_h / 2.0,
                xml(row.spec.label)
            );
            for (k, r) in ratios[ri].iter().enumerate() {
                let by = y + k as f64 * bar_h;
                let color = COLORS[k % COLORS.len()];
                match r {
                    Some(r) => {
                        let (x0, x1) = (x(0.0), x(r.est.log2()));
                        let _ = writeln!(
                            out,
                            "<rect x=\"{:.1}\" y=\"{by:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{color}\"/>",
                            x0.min(x1),
                            (x1 - x0).abs().max(0.5),
                            bar_h - 1.5
                        );
                        let (wl, wh, wy) =
                            (x(r.lo.log2()), x(r.hi.log2()), by + (bar_h - 1.5) / 2.0);
                        let _ = writeln!(
                            out,
                            "<path d=\"M{wl:.1} {wy:.1}H{wh:.1}M{wl:.1} {:.1}v{:.1}M{wh:.1} {:.1}v{:.1}\" stroke=\"#000\" stroke-width=\"0.8\"/>",
                            wy - 2.5,
                            5.0,
                            wy - 2.5,
                            5.0
                        );
                        let _ = writeln!(
                            out,
                            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"8\" fill=\"#333\">{:+.0}%</text>",
                            wh.max(x0) + 4.0,
                            by + bar_h - 2.0,
                            (r.est - 1.0) * 100.0
                        );
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"8\" fill=\"#c00\">failed</text>",
                            x(0.0) + 4.0,
                            by + bar_h - 2.0
                        );
                    }
                }
            }
            y += row_h;
        }
    }
    out.push_str("</svg>\n");
    out
}

/// The `format` of the JSON record.
const FORMAT: &str = "picos-bench/1";

/// What `--compare` reads of an earlier run's JSON record; the rest of the
/// record is ignored.
#[derive(Debug, Deserialize)]
pub struct OldRun {
    #[serde(default)]
    date_utc: Option<String>,
    rows: Vec<OldRow>,
}

#[derive(Debug, Deserialize)]
struct OldRow {
    key: String,
    unit: String,
    columns: Vec<OldColumn>,
}

#[derive(Debug, Deserialize)]
struct OldColumn {
    name: String,
    /// `null` for a sample that was not a finite number.
    samples: Vec<Option<f64>>,
}

/// Reads the JSON record of an earlier `picos bench --json` from `text`
/// (the contents of `path`).
pub fn read_old(text: &str, path: &Path) -> Result<OldRun, String> {
    let bad = |e: serde_json::Error| format!("--compare {}: {e}", path.display());
    // Syntax first, then the format, so that another JSON file gets this
    // message rather than one about the first key it lacks.
    let value: serde_json::Value = serde_json::from_str(text).map_err(bad)?;
    if value.get("format").and_then(serde_json::Value::as_str) != Some(FORMAT) {
        return Err(format!(
            "--compare {}: not the JSON of `picos bench --json` (format {FORMAT})",
            path.display()
        ));
    }
    // From the text again rather than from `value`: errors then say where.
    serde_json::from_str(text).map_err(bad)
}

/// The old run's samples of `key`/`column`, if it has them (all finite)
/// with `unit`.
fn old_samples(old: &OldRun, key: &str, unit: Unit, column: &str) -> Option<Vec<f64>> {
    let row = old.rows.iter().find(|r| r.key == key)?;
    if row.unit != unit.guest_name() {
        return None;
    }
    let col = row.columns.iter().find(|c| c.name == column)?;
    col.samples.iter().copied().collect()
}

/// `--compare`: per row and column, old vs new with the cost ratio
/// new/old and its 95% CI (unpaired: delta method, Welch df).
pub fn compare(results: &[RowResult], old: &OldRun, path: &Path) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n### Compared with {} ({})\n",
        path.display(),
        old.date_utc.as_deref().unwrap_or("date unknown")
    );
    let _ = writeln!(
        out,
        "Cost ratio new/old (latency: new/old; MB/s and ops/s: old/new), 95% CI by the delta \
         method with Welch's degrees of freedom; < 1 = the new build is faster.\n"
    );
    let _ = writeln!(out, "| test | column | old | new | new/old | |");
    let _ = writeln!(out, "|---|---|---:|---:|---:|---|");
    let mut missing = Vec::new();
    for row in results {
        let unit = row.spec.unit;
        for (i, c) in CONFIGS.iter().enumerate() {
            if c.launch == Launch::NotImplemented || row.cells[i].error.is_some() {
                continue;
            }
            let Some(new) = summary(row, i) else { continue };
            let Some(old_s) =
                old_samples(old, row.spec.key, unit, c.name).and_then(|xs| stats::summarize(&xs))
            else {
                missing.push(format!("{}/{}", row.spec.key, c.name));
                continue;
            };
            let ratio = stats::unpaired_log_ratio(&new, &old_s).map(|r| {
                if unit.higher_is_better() {
                    r.inverse()
                } else {
                    r
                }
            });
            let (ratio_text, verdict) = match ratio {
                Some(r) => (
                    format!("{:.3} [{:.3}, {:.3}]", r.est, r.lo, r.hi),
                    match r.side_of_one() {
                        1 => "slower",
                        -1 => "faster",
                        _ => "no change",
                    },
                ),
                None => ("–".into(), ""),
            };
            let _ = writeln!(
                out,
                "| {} ({}) | {} | {} | {} | {ratio_text} | {verdict} |",
                row.spec.label,
                unit.shown(),
                c.name,
                mean_ci(&old_s, unit),
                mean_ci(&new, unit)
            );
        }
    }
    if !missing.is_empty() {
        let _ = writeln!(out, "\nNot in the old run: {}.", missing.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Cell, RowResult, ROWS};
    use super::*;

    fn row(key: &str, native: &[f64], picos: &[f64]) -> RowResult {
        let spec = ROWS.iter().find(|r| r.key == key).unwrap();
        let mut cells: Vec<Cell> = CONFIGS.iter().map(|_| Cell::default()).collect();
        cells[0].samples = native.to_vec();
        cells[1].samples = picos.to_vec();
        cells[2].error = Some("exit status: 1".into());
        RowResult {
            spec,
            iters: 10,
            cells,
            orders: vec![vec![0, 1, 2]; native.len()],
        }
    }

    fn info() -> RunInfo {
        RunInfo {
            command: "picos bench".into(),
            date_utc: "2000-01-01 00:00 UTC".into(),
            started_unix_s: 0,
            duration_s: 1.0,
            quick: true,
            samples: 3,
            target_ns: 1e6,
            pin: None,
            kernel: "Linux x".into(),
            cpu: "cpu".into(),
            cpus: 2,
            load_start: "0.1 0.1 0.1".into(),
            load_end: "0.2 0.2 0.2".into(),
            files_dir: "/dev/shm/x (tmpfs)".into(),
        }
    }

    #[test]
    fn overheads_have_the_right_sign() {
        // Latency: picos twice as slow → +100%.
        let lat = row("null", &[100.0, 100.0, 100.0], &[200.0, 200.0, 200.0]);
        let r = cost_ratio(&lat, 1).unwrap();
        assert!((r.est - 2.0).abs() < 1e-12);
        // Bandwidth: picos half the MB/s → also +100%.
        let bw = row("pipe_bw", &[1000.0, 1000.0, 1000.0], &[500.0, 500.0, 500.0]);
        let r = cost_ratio(&bw, 1).unwrap();
        assert!((r.est - 2.0).abs() < 1e-12);
        assert!(cost_ratio(&bw, 2).is_none(), "a failed column has no ratio");
        assert_eq!(
            overhead(Ratio {
                est: 0.5,
                lo: 0.4,
                hi: 0.6
            }),
            "-50.0% [-60.0, -40.0]"
        );
        assert_eq!(
            overhead(Ratio {
                est: 13.0,
                lo: 12.0,
                hi: 14.0
            }),
            "+1200% [+1100, +1300]"
        );
    }

    #[test]
    fn formats() {
        assert_eq!(decimals(0.00257), 5);
        assert_eq!(decimals(0.0867), 4);
        assert_eq!(decimals(1.153), 2);
        assert_eq!(decimals(71.65), 1);
        assert_eq!(decimals(111_582.0), 0);
        let s = stats::summarize(&[100.0, 110.0, 120.0]).unwrap();
        assert_eq!(mean_ci(&s, Unit::Ns), "0.110 ± 0.025");
    }

    #[test]
    fn outputs() {
        let results = vec![
            row("null", &[100.0, 101.0, 99.0], &[150.0, 152.0, 149.0]),
            row(
                "read_bw",
                &[9000.0, 9100.0, 8900.0],
                &[8000.0, 8100.0, 7900.0],
            ),
        ];
        let md = markdown(&results, &info());
        assert!(
            md.contains("### System calls") && md.contains("### File system"),
            "{md}"
        );
        assert!(
            md.contains("| null syscall (getppid) (µs) | 0.100 ± 0.002 |"),
            "{md}"
        );
        assert!(md.contains("| +SC +RM | overhead |"), "{md}");
        assert!(
            md.contains("**failed**: null in picos-trap: exit status: 1"),
            "{md}"
        );
        let text = json(&results, &info());
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["format"], "picos-bench/1");
        let rows = v["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        let cols = rows[0]["columns"].as_array().unwrap();
        assert_eq!(cols[0]["picos_args"], serde_json::Value::Null);
        assert!(cols[0].get("cost_ratio").is_none(), "{text}");
        assert_eq!(cols[1]["samples"].as_array().unwrap().len(), 3);
        assert!(cols[1]["overhead_pct"].as_f64().unwrap() > 49.0);
        assert!(cols[1]["cost_ratio"]["lo"].as_f64().is_some(), "{text}");
        assert_eq!(cols[2]["error"], "exit status: 1");
        assert_eq!(cols[2]["cost_ratio"], serde_json::Value::Null);
        let columns = v["columns"].as_array().unwrap();
        assert_eq!(columns[1]["picos_args"], serde_json::json!([]));
        assert_eq!(columns[2]["picos_args"][0], "--no-patch");
        assert_eq!(
            columns.last().unwrap()["picos_args"],
            serde_json::json!(["-m", "SANDBOX"])
        );
        assert_eq!(columns.last().unwrap()["why"], serde_json::Value::Null);
        let svg_text = svg(&results, &info());
        assert!(svg_text.starts_with("<svg") && svg_text.ends_with("</svg>\n"));
        // Comparing a run with itself: ratios of 1, "no change".
        let old = read_old(&text, Path::new("old.json")).unwrap();
        let cmp = compare(&results, &old, Path::new("old.json"));
        assert!(
            cmp.contains("| null syscall (getppid) (µs) | picos | "),
            "{cmp}"
        );
        assert!(
            cmp.contains("1.000 [") && cmp.contains("no change"),
            "{cmp}"
        );
        assert!(cmp.contains("2000-01-01 00:00 UTC"), "{cmp}");
    }

    /// The record as the hand-written writer of earlier builds printed it
    /// (integers without ".0", one row per line group) still reads back.
    #[test]
    fn reads_an_earlier_builds_record() {
        let text = r#"{
  "format": "picos-bench/1",
  "picos_version": "0.1.0",
  "date_utc": "2000-01-01 00:00 UTC",
  "pin": null,
  "columns": [
    {"name": "native", "available": true, "picos_args": null}
  ],
  "rows": [
    {"key": "null", "label": "null syscall (getppid)", "unit": "ns", "better": "lower", "group": "syscalls", "iters": 10,
     "round_orders": [["native", "picos"]],
     "columns": [
       {"name": "native", "error": null, "samples": [100, 101.5, 99], "elapsed_ns": [1000000, 1000000, 1000000], "mean": 100.16666666666667},
       {"name": "picos", "error": null, "samples": [150, null, 149], "elapsed_ns": [1, 1, 1], "cost_ratio": null, "overhead_pct": null}
     ]}
  ]
}
"#;
        let old = read_old(text, Path::new("old.json")).unwrap();
        assert_eq!(
            old_samples(&old, "null", Unit::Ns, "native"),
            Some(vec![100.0, 101.5, 99.0])
        );
        assert_eq!(old_samples(&old, "null", Unit::Ns, "picos"), None);
        assert_eq!(old_samples(&old, "null", Unit::MBps, "native"), None);
        assert_eq!(old_samples(&old, "pipe", Unit::Ns, "native"), None);
    }

    #[test]
    fn bad_old_records_are_refused_clearly() {
        let p = Path::new("old.json");
        let err = |text: &str| read_old(text, p).unwrap_err();
        assert!(err("").contains("--compare old.json: EOF while parsing"));
        assert!(err("{\"format\": ").contains("line 1 column"));
        for other in [
            "[1, 2]",
            "{}",
            "{\"format\": \"x\"}",
            "{\"format\": 1}",
            "3",
        ] {
            let e = err(other);
            assert!(
                e.contains("not the JSON of `picos bench --json` (format picos-bench/1)"),
                "{other}: {e}"
            );
        }
        let e = err("{\"format\": \"picos-bench/1\"}");
        assert!(e.contains("missing field `rows`"), "{e}");
        let e = err("{\"format\": \"picos-bench/1\", \"rows\": [{\"key\": 1}]}");
        assert!(
            e.contains("invalid type: integer `1`, expected a string at line 1 column"),
            "{e}"
        );
    }
}
