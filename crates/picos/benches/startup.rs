//! Start-up benchmark: the same command natively and under `picos run`,
//! interleaved in one run (native and picos alternate within every round, in
//! alternating order, so drift hits both alike).
//!
//! ```text
//! cargo bench -p picos --bench startup [-- --samples N --runs-per-sample K] [--picos PATH]
//! ```
//!
//! `--picos PATH` measures another `picos` binary (an earlier build, for an
//! A/B comparison: compare the two runs' ratios to native). `--sandbox`
//! compares `picos run --sandbox` with plain `picos run` instead of picos
//! with native (what the sandbox adds to start-up; run it from a directory
//! other than `/`, which the sandbox's default policy refuses);
//! `--picos-args "ARGS"` compares `picos run ARGS` with it likewise.
//!
//! Each sample is the mean wall time of K back-to-back runs (spawn to exit).
//! Reported: mean ± 95% confidence interval (Student's t) per column, the
//! paired difference picos − native, and the paired ratio picos / native,
//! each with its own 95% interval.

use std::process::{Command, Stdio};
use std::time::Instant;

/// Two-sided 95% Student-t quantile for `df` degrees of freedom.
fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => T[df - 1],
        31..=40 => 2.021,
        41..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// Mean and 95% CI half-width.
fn mean_ci(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, t95(xs.len() - 1) * (var / n).sqrt())
}

/// How a column starts the command: directly, or under `picos run` with
/// these options.
#[derive(Clone, Copy)]
enum Col<'a> {
    Native,
    Picos(&'a str, &'a [&'a str]),
}

fn time_runs(cmd: &[&str], col: Col<'_>, k: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..k {
        let mut c = match col {
            Col::Picos(p, opts) => {
                let mut c = Command::new(p);
                c.arg("run").args(opts).arg("--").args(cmd);
                c
            }
            Col::Native => {
                let mut c = Command::new(cmd[0]);
                c.args(&cmd[1..]);
                c
            }
        };
        let st = c
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("spawn");
        assert!(st.success(), "{:?} failed: {st}", cmd);
    }
    start.elapsed().as_secs_f64() / k as f64
}

struct Row {
    name: String,
    native: (f64, f64),
    picos: (f64, f64),
    diff: (f64, f64),
    ratio: (f64, f64),
    n: usize,
}

fn bench(name: &str, cmd: &[&str], base: Col<'_>, test: Col<'_>, samples: usize, k: usize) -> Row {
    // Warm-up: page cache, dynamic linker cache, CPU frequency.
    for _ in 0..3 {
        time_runs(cmd, base, 1);
        time_runs(cmd, test, 1);
    }
    let (mut nat, mut pic) = (Vec::new(), Vec::new());
    for i in 0..samples {
        if i % 2 == 0 {
            nat.push(time_runs(cmd, base, k));
            pic.push(time_runs(cmd, test, k));
        } else {
            pic.push(time_runs(cmd, test, k));
            nat.push(time_runs(cmd, base, k));
        }
        eprint!("\r{name}: sample {}/{samples}", i + 1);
    }
    eprintln!();
    let diffs: Vec<f64> = pic.iter().zip(&nat).map(|(p, n)| p - n).collect();
    let ratios: Vec<f64> = pic.iter().zip(&nat).map(|(p, n)| p / n).collect();
    Row {
        name: name.into(),
        native: mean_ci(&nat),
        picos: mean_ci(&pic),
        diff: mean_ci(&diffs),
        ratio: mean_ci(&ratios),
        n: samples,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let samples = opt("--samples", 30).max(2);
    let k = opt("--runs-per-sample", 10).max(1);
    let picos = args
        .iter()
        .position(|a| a == "--picos")
        .and_then(|i| args.get(i + 1))
        .map_or(env!("CARGO_BIN_EXE_picos"), |p| p.as_str());
    // `--sandbox`, or `--picos-args "ARGS"`: picos with those options
    // against plain picos.
    let extra: Vec<&str> = if args.iter().any(|a| a == "--sandbox") {
        vec!["--sandbox"]
    } else {
        args.iter()
            .position(|a| a == "--picos-args")
            .and_then(|i| args.get(i + 1))
            .map_or_else(Vec::new, |v| v.split_whitespace().collect())
    };
    let label = format!("picos {}", extra.join(" "));
    let (base, test, names) = if !extra.is_empty() {
        (
            Col::Picos(picos, &[]),
            Col::Picos(picos, &extra),
            ("picos", label.as_str()),
        )
    } else {
        (Col::Native, Col::Picos(picos, &[]), ("native", "picos"))
    };
    let mut rows = vec![bench("/bin/true", &["/bin/true"], base, test, samples, k)];
    if std::path::Path::new("/usr/bin/python3").exists() {
        rows.push(bench(
            "python3 -c pass",
            &["/usr/bin/python3", "-c", "pass"],
            base,
            test,
            samples,
            k,
        ));
    }
    if std::path::Path::new("/bin/busybox").exists() {
        rows.push(bench(
            "busybox true (static)",
            &["/bin/busybox", "true"],
            base,
            test,
            samples,
            k,
        ));
    }
    println!("picos: {picos}\n");
    let (a, b) = names;
    println!("| command | {a} (ms) | {b} (ms) | {b} − {a} (ms) | {b} / {a} |");
    println!("|---|---|---|---|---|");
    for r in &rows {
        let ms = |v: (f64, f64)| format!("{:.3} ± {:.3}", v.0 * 1e3, v.1 * 1e3);
        println!(
            "| {} | {} | {} | {} | {:.3} ± {:.3} |",
            r.name,
            ms(r.native),
            ms(r.picos),
            ms(r.diff),
            r.ratio.0,
            r.ratio.1
        );
    }
    println!("\n{} samples per column, each the mean of {} runs; mean ± 95% CI (Student's t); difference and ratio are paired per round.", rows[0].n, k);
}
