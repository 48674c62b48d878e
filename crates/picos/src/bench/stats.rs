//! Statistics for `picos bench`: mean with a Student-t confidence interval,
//! quartiles and Tukey outliers, and ratios with their own intervals.
//!
//! - **Mean ± 95% CI**: `mean ± t(0.975, n−1) · s/√n`, with `s` the sample
//!   standard deviation (n − 1 in the denominator).
//! - **Ratio to native, in one run** ([`paired_log_ratio`]): each round runs
//!   every column once, so round `i` gives one ratio `xᵢ/yᵢ`. The estimate
//!   is the geometric mean of those per-round ratios and its interval is the
//!   t interval of the mean of `ln(xᵢ/yᵢ)`, exponentiated. Pairing cancels
//!   drift that hits a whole round; the log scale makes the interval of
//!   `y/x` exactly the inverse of that of `x/y` (so latency and throughput
//!   rows are treated alike).
//! - **Ratio of two runs** ([`unpaired_log_ratio`], `--compare`): samples of
//!   two runs are not paired, so the ratio of the means uses the delta
//!   method on the logs, `Var(ln x̄) ≈ s²/(n·x̄²)`, with Welch–Satterthwaite
//!   degrees of freedom.
//! - **Outliers**: samples outside Tukey's fences `[Q1 − 1.5·IQR,
//!   Q3 + 1.5·IQR]` (quartiles by linear interpolation, as numpy's default)
//!   are counted and reported; they are never dropped from any statistic.

/// Two-sided 95% quantile of Student's t (the 0.975 quantile) for `df`
/// degrees of freedom; between table entries, interpolated linearly in
/// 1/df. NaN for df = 0.
pub fn t95(df: f64) -> f64 {
    const SMALL: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    const LARGE: [(f64, f64); 7] = [
        (30.0, 2.042),
        (40.0, 2.021),
        (50.0, 2.009),
        (60.0, 2.000),
        (80.0, 1.990),
        (120.0, 1.980),
        (f64::INFINITY, 1.960),
    ];
    if df.is_nan() || df < 1.0 {
        return f64::NAN;
    }
    if df <= 30.0 {
        let lo = df.floor();
        let t_lo = SMALL[lo as usize - 1];
        if lo == df || lo == 30.0 {
            return t_lo;
        }
        let t_hi = SMALL[lo as usize];
        let w = (1.0 / lo - 1.0 / df) / (1.0 / lo - 1.0 / (lo + 1.0));
        return t_lo + w * (t_hi - t_lo);
    }
    for pair in LARGE.windows(2) {
        let ((d0, t0), (d1, t1)) = (pair[0], pair[1]);
        if df <= d1 {
            let w = (1.0 / d0 - 1.0 / df) / (1.0 / d0 - 1.0 / d1);
            return t0 + w * (t1 - t0);
        }
    }
    1.960
}

/// Summary of one column's samples.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1 denominator); NaN if n < 2.
    pub sd: f64,
    /// Half-width of the 95% confidence interval of the mean; NaN if n < 2.
    pub ci95: f64,
    pub median: f64,
    pub q1: f64,
    pub q3: f64,
    pub min: f64,
    pub max: f64,
    /// Samples outside Tukey's fences (1.5 IQR beyond the quartiles).
    pub outliers: usize,
}

/// The `p` quantile of sorted data, by linear interpolation between order
/// statistics (Hyndman–Fan type 7, numpy's default).
fn quantile(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Summarises `xs`. `None` if it is empty.
pub fn summarize(xs: &[f64]) -> Option<Summary> {
    if xs.is_empty() {
        return None;
    }
    let n = xs.len();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let (sd, ci95) = if n >= 2 {
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let sd = var.sqrt();
        (sd, t95((n - 1) as f64) * sd / (n as f64).sqrt())
    } else {
        (f64::NAN, f64::NAN)
    };
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (q1, q3) = (quantile(&sorted, 0.25), quantile(&sorted, 0.75));
    let iqr = q3 - q1;
    let (lo, hi) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
    Some(Summary {
        n,
        mean,
        sd,
        ci95,
        median: quantile(&sorted, 0.5),
        q1,
        q3,
        min: sorted[0],
        max: sorted[n - 1],
        outliers: xs.iter().filter(|&&x| x < lo || x > hi).count(),
    })
}

/// A ratio with its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Ratio {
    pub est: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Ratio {
    /// The ratio the other way round (`y/x` from `x/y`).
    pub fn inverse(self) -> Ratio {
        Ratio {
            est: 1.0 / self.est,
            lo: 1.0 / self.hi,
            hi: 1.0 / self.lo,
        }
    }

    /// Whether the interval lies wholly above (1), below (−1) or across (0) 1.
    pub fn side_of_one(self) -> i32 {
        if self.lo > 1.0 {
            1
        } else if self.hi < 1.0 {
            -1
        } else {
            0
        }
    }
}

/// Geometric mean of the paired ratios `num[i]/den[i]` with the 95% t
/// interval of the mean log ratio (see the module doc). Uses the first
/// min(len) pairs; `None` with fewer than 2 pairs or a non-positive value.
pub fn paired_log_ratio(num: &[f64], den: &[f64]) -> Option<Ratio> {
    let logs: Vec<f64> = num
        .iter()
        .zip(den)
        .map(|(&a, &b)| (a / b).ln())
        .collect::<Vec<_>>();
    if logs.len() < 2 || logs.iter().any(|l| !l.is_finite()) {
        return None;
    }
    let s = summarize(&logs)?;
    Some(Ratio {
        est: s.mean.exp(),
        lo: (s.mean - s.ci95).exp(),
        hi: (s.mean + s.ci95).exp(),
    })
}

/// Ratio of the means `mean(new)/mean(old)` of two independent runs, with a
/// 95% interval by the delta method on the logs and Welch–Satterthwaite
/// degrees of freedom (see the module doc). `None` if either has fewer
/// than 2 samples or a non-positive mean.
pub fn unpaired_log_ratio(new: &Summary, old: &Summary) -> Option<Ratio> {
    if new.n < 2 || old.n < 2 || new.mean <= 0.0 || old.mean <= 0.0 {
        return None;
    }
    // Variance of ln(mean) ≈ (sd/mean)² / n for each.
    let a = (new.sd / new.mean).powi(2) / new.n as f64;
    let b = (old.sd / old.mean).powi(2) / old.n as f64;
    let est = (new.mean / old.mean).ln();
    let se = (a + b).sqrt();
    let df = if a + b == 0.0 {
        (new.n + old.n - 2) as f64
    } else {
        (a + b).powi(2) / (a * a / (new.n - 1) as f64 + b * b / (old.n - 1) as f64)
    };
    let half = t95(df) * se;
    Some(Ratio {
        est: est.exp(),
        lo: (est - half).exp(),
        hi: (est + half).exp(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    #[test]
    fn t_table() {
        assert_eq!(t95(1.0), 12.706);
        assert_eq!(t95(7.0), 2.365);
        assert_eq!(t95(29.0), 2.045);
        assert_eq!(t95(30.0), 2.042);
        assert_eq!(t95(60.0), 2.000);
        assert!(close(t95(1e9), 1.960, 1e-6));
        assert!(t95(0.0).is_nan());
        // Between entries: monotone, and exact quantiles within 0.002.
        assert!(close(t95(35.0), 2.030, 0.001)); // exact 2.0301
        assert!(close(t95(100.0), 1.984, 0.001)); // exact 1.9840
        assert!(close(t95(7.5), (2.365 + 2.306) / 2.0, 0.01));
        let mut prev = f64::INFINITY;
        for df in 1..500 {
            let t = t95(df as f64);
            assert!(t < prev, "t95 not decreasing at {df}");
            prev = t;
        }
    }

    #[test]
    fn summary_of_a_known_data_set() {
        // By hand: mean 5; squared deviations sum to 32, s² = 32/7;
        // s = 2.138090; s/√8 = 0.755929; t(7) = 2.365 → CI ±1.787772.
        // Sorted 2 4 4 4 5 5 7 9: Q1 = 4, median 4.5, Q3 = 5 + 0.25·2 = 5.5;
        // IQR 1.5, fences [1.75, 7.75] → one outlier (9).
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert_eq!(s.mean, 5.0);
        assert!(close(s.sd, 2.138_090, 1e-6));
        assert!(close(s.ci95, 1.787_772, 1e-6));
        assert_eq!((s.q1, s.median, s.q3), (4.0, 4.5, 5.5));
        assert_eq!((s.min, s.max), (2.0, 9.0));
        assert_eq!(s.outliers, 1);
    }

    #[test]
    fn summary_edge_cases() {
        assert!(summarize(&[]).is_none());
        let one = summarize(&[3.0]).unwrap();
        assert_eq!((one.mean, one.median, one.outliers), (3.0, 3.0, 0));
        assert!(one.ci95.is_nan());
        let flat = summarize(&[1.0; 5]).unwrap();
        assert_eq!((flat.sd, flat.ci95, flat.outliers), (0.0, 0.0, 0));
        // Python: statistics.mean/stdev of [10.1, 9.9, 10.0, 10.2, 9.8]
        // = 10.0 / 0.158114; t(4) = 2.776 → ±0.196293.
        let s = summarize(&[10.1, 9.9, 10.0, 10.2, 9.8]).unwrap();
        assert!(close(s.mean, 10.0, 1e-12));
        assert!(close(s.ci95, 2.776 * 0.158_113_883 / 5f64.sqrt(), 1e-9));
        assert!(close(s.ci95, 0.196_293, 1e-5));
    }

    #[test]
    fn paired_ratios() {
        // Constant ratio 2: no spread.
        let r = paired_log_ratio(&[2.0, 4.0, 8.0], &[1.0, 2.0, 4.0]).unwrap();
        assert!(close(r.est, 2.0, 1e-12) && close(r.lo, 2.0, 1e-12) && close(r.hi, 2.0, 1e-12));
        // Log ratios 0 and 2: mean 1, s = √2, se = 1, t(1) = 12.706.
        let e2 = 2f64.exp();
        let r = paired_log_ratio(&[1.0, e2], &[1.0, 1.0]).unwrap();
        assert!(close(r.est, 1f64.exp(), 1e-12));
        assert!(close(r.lo, (1.0 - 12.706f64).exp(), 1e-9));
        assert!(close(r.hi, (1.0 + 12.706f64).exp(), 1e-9));
        // Inverting the pairs inverts the interval.
        let a = [1.1, 1.3, 0.9, 1.2];
        let b = [1.0, 1.0, 1.05, 0.95];
        let (x, y) = (
            paired_log_ratio(&a, &b).unwrap(),
            paired_log_ratio(&b, &a).unwrap(),
        );
        let yi = y.inverse();
        assert!(
            close(x.est, yi.est, 1e-12) && close(x.lo, yi.lo, 1e-12) && close(x.hi, yi.hi, 1e-12)
        );
        assert!(paired_log_ratio(&[1.0], &[1.0]).is_none());
        assert!(paired_log_ratio(&[1.0, 0.0], &[1.0, 1.0]).is_none());
    }

    #[test]
    fn unpaired_ratio() {
        // new: mean 20, sd 2, n 10; old: mean 10, sd 1, n 10.
        // a = b = (0.1)²/10 = 0.001; se = √0.002 = 0.0447214;
        // df = 0.002² / (2 · 0.001²/9) = 18; t(18) = 2.101.
        let mk = |mean: f64, sd: f64, n: usize| Summary {
            n,
            mean,
            sd,
            ci95: 0.0,
            median: mean,
            q1: mean,
            q3: mean,
            min: mean,
            max: mean,
            outliers: 0,
        };
        let r = unpaired_log_ratio(&mk(20.0, 2.0, 10), &mk(10.0, 1.0, 10)).unwrap();
        let half = 2.101 * 0.002f64.sqrt();
        assert!(close(r.est, 2.0, 1e-12));
        assert!(close(r.lo, 2.0 * (-half).exp(), 1e-9));
        assert!(close(r.hi, 2.0 * half.exp(), 1e-9));
        assert_eq!(r.side_of_one(), 1);
        assert!(unpaired_log_ratio(&mk(1.0, 0.0, 1), &mk(1.0, 0.0, 5)).is_none());
    }
}
