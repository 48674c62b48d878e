//! The outputs of `picos bench`: the Markdown tables (as the seeds'), the
//! JSON record of every sample, the SVG chart of overheads, and the
//! comparison with an earlier run.
//!
//! **Overhead** is `cost ratio − 1`, where the cost ratio is column/native
//! for latencies and native/column for bandwidths and throughputs (so it is
//! always "how much more time the same work takes"; negative = faster). It
//! is the geometric mean of the per-round paired ratios, with a 95% t
//! interval on the log scale ([`stats::paired_log_ratio`]).

use super::json::{self, Value};
use super::stats::{self, Ratio, Summary};
use super::{Group, Launch, RowResult, RunInfo, Unit, CONFIGS};
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

/// The JSON record: the run, the columns, and per row every sample of
/// every column with its statistics.
pub fn json(results: &[RowResult], info: &RunInfo) -> String {
    let s = json::string;
    let n = json::number;
    let mut out = String::from("{\n");
    let _ = writeln!(out, "  \"format\": \"picos-bench/1\",");
    let _ = writeln!(
        out,
        "  \"picos_version\": {},",
        s(env!("CARGO_PKG_VERSION"))
    );
    let _ = writeln!(out, "  \"command\": {},", s(&info.command));
    let _ = writeln!(out, "  \"date_utc\": {},", s(&info.date_utc));
    let _ = writeln!(out, "  \"started_unix_s\": {},", info.started_unix_s);
    let _ = writeln!(out, "  \"duration_s\": {},", n(info.duration_s));
    let _ = writeln!(out, "  \"quick\": {},", info.quick);
    let _ = writeln!(out, "  \"samples\": {},", info.samples);
    let _ = writeln!(out, "  \"target_loop_ns\": {},", n(info.target_ns));
    let _ = writeln!(
        out,
        "  \"pin\": {},",
        info.pin.map(|c| c.to_string()).unwrap_or("null".into())
    );
    let _ = writeln!(
        out,
        "  \"host\": {{\"kernel\": {}, \"cpu\": {}, \"cpus\": {}, \"load_start\": {}, \"load_end\": {}, \"files_dir\": {}}},",
        s(&info.kernel),
        s(&info.cpu),
        info.cpus,
        s(&info.load_start),
        s(&info.load_end),
        s(&info.files_dir)
    );
    let cols: Vec<String> = CONFIGS
        .iter()
        .map(|c| match c.launch {
            Launch::Native => format!(
                "{{\"name\": {}, \"available\": true, \"picos_args\": null}}",
                s(c.name)
            ),
            Launch::Picos(a) => format!(
                "{{\"name\": {}, \"available\": true, \"picos_args\": [{}]}}",
                s(c.name),
                a.iter().map(|a| s(a)).collect::<Vec<_>>().join(", ")
            ),
            Launch::NotImplemented => format!(
                "{{\"name\": {}, \"available\": false, \"why\": \"not implemented\"}}",
                s(c.name)
            ),
        })
        .collect();
    let _ = writeln!(out, "  \"columns\": [\n    {}\n  ],", cols.join(",\n    "));
    out.push_str("  \"rows\": [");
    for (ri, row) in results.iter().enumerate() {
        out.push_str(if ri == 0 { "\n" } else { ",\n" });
        let _ = writeln!(
            out,
            "    {{\"key\": {}, \"label\": {}, \"unit\": {}, \"better\": {}, \"group\": {}, \"iters\": {},",
            s(row.spec.key),
            s(row.spec.label),
            s(row.spec.unit.guest_name()),
            s(if row.spec.unit.higher_is_better() { "higher" } else { "lower" }),
            s(row.spec.group.key()),
            row.iters
        );
        let orders: Vec<String> = row
            .orders
            .iter()
            .map(|o| {
                format!(
                    "[{}]",
                    o.iter()
                        .map(|&c| s(CONFIGS[c].name))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
            .collect();
        let _ = writeln!(out, "     \"round_orders\": [{}],", orders.join(", "));
        out.push_str("     \"columns\": [");
        let mut first = true;
        for (i, c) in CONFIGS.iter().enumerate() {
            if c.launch == Launch::NotImplemented {
                continue;
            }
            out.push_str(if first { "\n" } else { ",\n" });
            first = false;
            let cell = &row.cells[i];
            let _ = write!(
                out,
                "       {{\"name\": {}, \"error\": {}, \"samples\": {}, \"elapsed_ns\": {}",
                s(c.name),
                cell.error.as_deref().map(s).unwrap_or("null".into()),
                json::numbers(&cell.samples),
                json::numbers(&cell.elapsed_ns)
            );
            if let Some(st) = summary(row, i) {
                let _ = write!(
                    out,
                    ", \"mean\": {}, \"ci95\": {}, \"sd\": {}, \"median\": {}, \"min\": {}, \"max\": {}, \"outliers\": {}",
                    n(st.mean),
                    n(st.ci95),
                    n(st.sd),
                    n(st.median),
                    n(st.min),
                    n(st.max),
                    st.outliers
                );
            }
            if i > 0 {
                match cost_ratio(row, i) {
                    Some(r) => {
                        let _ = write!(
                            out,
                            ", \"cost_ratio\": {{\"est\": {}, \"lo\": {}, \"hi\": {}}}, \"overhead_pct\": {}",
                            n(r.est),
                            n(r.lo),
                            n(r.hi),
                            n((r.est - 1.0) * 100.0)
                        );
                    }
                    None => out.push_str(", \"cost_ratio\": null, \"overhead_pct\": null"),
                }
            }
            out.push('}');
        }
        out.push_str("\n     ]}");
    }
    out.push_str("\n  ]\n}\n");
    out
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
    const COLORS: [&str; 4] = ["#4477aa", "#ee6677", "#228833", "#ccbb44"];
    let cols: Vec<usize> = (1..CONFIGS.len())
        .filter(|&i| matches!(CONFIGS[i].launch, Launch::Picos(_)))
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

/// The old run's samples of `key`/`column`, if it has them with `unit`.
fn old_samples(old: &Value, key: &str, unit: Unit, column: &str) -> Option<Vec<f64>> {
    let row = old
        .get("rows")?
        .as_array()?
        .iter()
        .find(|r| r.get("key").and_then(Value::as_str) == Some(key))?;
    if row.get("unit")?.as_str()? != unit.guest_name() {
        return None;
    }
    let col = row
        .get("columns")?
        .as_array()?
        .iter()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(column))?;
    col.get("samples")?
        .as_array()?
        .iter()
        .map(Value::as_f64)
        .collect()
}

/// Checks that `old` is the JSON of `picos bench --json`.
pub fn check_old(old: &Value, path: &Path) -> Result<(), String> {
    if old.get("format").and_then(Value::as_str) != Some("picos-bench/1") {
        return Err(format!(
            "--compare {}: not the JSON of `picos bench --json` (format picos-bench/1)",
            path.display()
        ));
    }
    Ok(())
}

/// `--compare`: per row and column, old vs new with the cost ratio
/// new/old and its 95% CI (unpaired: delta method, Welch df).
pub fn compare(results: &[RowResult], old: &Value, path: &Path) -> Result<String, String> {
    check_old(old, path)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n### Compared with {} ({})\n",
        path.display(),
        old.get("date_utc")
            .and_then(Value::as_str)
            .unwrap_or("date unknown")
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
    Ok(out)
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
        assert!(md.contains("n/a (not implemented)"), "{md}");
        assert!(
            md.contains("**failed**: null in picos-trap: exit status: 1"),
            "{md}"
        );
        let text = json(&results, &info());
        let v = json::parse(&text).unwrap();
        let rows = v.get("rows").unwrap().as_array().unwrap();
        assert_eq!(rows.len(), 2);
        let cols = rows[0].get("columns").unwrap().as_array().unwrap();
        assert_eq!(cols[1].get("samples").unwrap().as_array().unwrap().len(), 3);
        assert!(cols[1].get("overhead_pct").unwrap().as_f64().unwrap() > 49.0);
        let svg_text = svg(&results, &info());
        assert!(svg_text.starts_with("<svg") && svg_text.ends_with("</svg>\n"));
        // Comparing a run with itself: ratios of 1, "no change".
        let cmp = compare(&results, &v, Path::new("old.json")).unwrap();
        assert!(
            cmp.contains("| null syscall (getppid) (µs) | picos | "),
            "{cmp}"
        );
        assert!(
            cmp.contains("1.000 [") && cmp.contains("no change"),
            "{cmp}"
        );
        assert!(compare(&results, &Value::Obj(vec![]), Path::new("x")).is_err());
    }
}
