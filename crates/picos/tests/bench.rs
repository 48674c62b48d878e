//! `picos bench --quick`: every row gives a finite positive number in every
//! column that exists, the not-implemented column is shown as such, and the
//! JSON and SVG outputs are written and well formed.
//!
//! Needs a C compiler (the guest is compiled on first use); without one the
//! test prints `SKIP` and why.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

const PICOS: &str = env!("CARGO_BIN_EXE_picos");

#[test]
fn quick_bench_covers_every_row_and_column() {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let have_cc = Command::new(&cc)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !have_cc {
        println!("SKIP quick_bench_covers_every_row_and_column: no C compiler `{cc}`: apt-get install gcc");
        return;
    }
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = base.join(format!("picos-bench-test.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json_path, svg_path) = (dir.join("bench.json"), dir.join("bench.svg"));

    // The rows, as `--list` prints them.
    let list = Command::new(PICOS)
        .args(["bench", "--list"])
        .output()
        .unwrap();
    assert!(list.status.success(), "picos bench --list: {list:?}");
    let list = String::from_utf8(list.stdout).unwrap();
    let keys: Vec<&str> = list
        .split("rows:\n")
        .nth(1)
        .expect("--list prints the rows")
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(keys.len() >= 35, "rows: {keys:?}");

    let started = std::time::Instant::now();
    let out = Command::new(PICOS)
        .args(["bench", "--quick", "--json"])
        .arg(&json_path)
        .arg("--svg")
        .arg(&svg_path)
        // Cache the compiled guest in the target directory, not in $HOME.
        .env("XDG_CACHE_HOME", base.join("picos-cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!(
        "{stdout}\n(picos bench --quick took {:.1} s)",
        started.elapsed().as_secs_f64()
    );
    assert!(
        out.status.success(),
        "picos bench --quick failed: {}\n{stderr}",
        out.status
    );
    assert!(!stdout.contains("failed"), "{stdout}");

    // Markdown: one line per row.
    let table_lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| test "))
        .collect();
    assert_eq!(table_lines.len(), keys.len(), "{stdout}");

    // JSON: every row, every available column, every sample finite and > 0.
    let text = std::fs::read_to_string(&json_path).unwrap();
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("bench JSON: {e}\n{text}"));
    assert_eq!(v["format"], "picos-bench/1");
    let columns = v["columns"].as_array().unwrap();
    let available: Vec<&str> = columns
        .iter()
        .filter(|c| c["available"] == true)
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        available,
        [
            "native",
            "picos",
            "picos-trap",
            "picos+mounts",
            "picos+cache",
            "picos+wb",
            "picos+tmpfs",
            "native+SUD",
            "+SC +RM"
        ]
    );
    let rows = v["rows"].as_array().unwrap();
    let json_keys: Vec<&str> = rows.iter().filter_map(|r| r["key"].as_str()).collect();
    assert_eq!(json_keys, keys);
    for row in rows {
        let key = row["key"].as_str().unwrap();
        let cols = row["columns"].as_array().unwrap();
        // picos+cache (a read-only files directory) measures only the rows
        // that read paths and files, and lists no other; picos+wb (a
        // write-back files directory) only those that write at the offset.
        let reads_paths = key.starts_with("open_")
            || key.starts_with("stat_")
            || key == "fstat"
            || key.starts_with("pread_")
            || key == "read_256"
            || key == "read_1k";
        let writes = key == "write_256" || key == "write_1k";
        // picos+tmpfs (the files directory a tmpfs mount): the file-system
        // rows.
        let files = reads_paths
            || key.starts_with("write_") && key != "write_1"
            || key.starts_with("pwrite_")
            || key.starts_with("create_")
            || key.starts_with("delete_")
            || key == "read_bw";
        assert_eq!(
            cols.iter().any(|c| c["name"] == "picos+tmpfs"),
            files,
            "{key}"
        );
        assert_eq!(
            cols.iter().any(|c| c["name"] == "picos+cache"),
            reads_paths,
            "{key}"
        );
        assert_eq!(
            cols.iter().any(|c| c["name"] == "picos+wb"),
            writes,
            "{key}"
        );
        for name in available
            .iter()
            .filter(|&&n| n != "picos+cache" || reads_paths)
            .filter(|&&n| n != "picos+wb" || writes)
            .filter(|&&n| n != "picos+tmpfs" || files)
        {
            let col = cols
                .iter()
                .find(|c| c["name"].as_str() == Some(name))
                .unwrap_or_else(|| panic!("{key}: no column {name}"));
            assert_eq!(col["error"], Value::Null, "{key}/{name}");
            let samples = col["samples"].as_array().unwrap();
            assert_eq!(samples.len(), 5, "{key}/{name}: --quick takes 5 samples");
            for s in samples {
                let x = s.as_f64().unwrap_or(f64::NAN);
                assert!(x.is_finite() && x > 0.0, "{key}/{name}: sample {s:?}");
            }
            let mean = col["mean"].as_f64().unwrap();
            assert!(mean.is_finite() && mean > 0.0, "{key}/{name}: mean {mean}");
        }
    }

    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    let _ = std::fs::remove_dir_all(&dir);
}
