//! The example server (examples/echo_server.rs), run in-process: while one
//! request spins forever, other requests are answered within about a budget.

#[allow(dead_code)]
#[path = "../examples/echo_server.rs"]
mod echo_server;

use echo_server::{serve, Config};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Client {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl Client {
    fn connect(addr: std::net::SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Client {
            r: BufReader::new(s.try_clone().unwrap()),
            w: s,
        }
    }
    fn send(&mut self, line: &str) {
        self.w.write_all(format!("{line}\n").as_bytes()).unwrap();
    }
    fn recv(&mut self) -> String {
        let mut s = String::new();
        self.r.read_line(&mut s).unwrap();
        s.trim_end().to_string()
    }
    fn ask(&mut self, line: &str) -> (String, Duration) {
        let t = Instant::now();
        self.send(line);
        let r = self.recv();
        (r, t.elapsed())
    }
}

#[test]
fn looping_request_does_not_hold_up_others() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // The server stops by itself after 20 s at the latest.
    let cfg = Config {
        budget_us: 2_000,
        max_request_us: 300_000,
        run_for: Duration::from_secs(20),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let server = std::thread::spawn(move || serve(listener, cfg, stop).unwrap());

    let mut looper = Client::connect(addr);
    looper.send("loop");
    let mut c = Client::connect(addr);
    // Make sure the loop has started.
    std::thread::sleep(Duration::from_millis(10));

    let mut worst = Duration::ZERO;
    for i in 0..30 {
        let (r, took) = c.ask(&format!("echo hello {i}"));
        assert_eq!(r, format!("hello {i}"));
        worst = worst.max(took);
    }
    let (r, took) = c.ask("fib 20");
    assert_eq!(r, "6765");
    worst = worst.max(took);
    eprintln!("worst latency while a request loops: {worst:?}");
    // Without preemption the first request would wait for the looping one
    // to be cancelled (300 ms of budget); with it, ~2 ms slices. The bound
    // sits between the two, far from both: a busy CI machine can stall a
    // thread for tens of milliseconds (a 50 ms bound was met in a loaded
    // run only by luck), and the benchmark measures the latency itself.
    assert!(
        worst < Duration::from_millis(200),
        "latency {worst:?} while a request loops"
    );

    // The looping request is cancelled after 300 ms of budget.
    let t = Instant::now();
    assert_eq!(looper.recv(), "cancelled");
    assert!(t.elapsed() < Duration::from_secs(5));

    // A slow request that finishes over several slices.
    let (r, _) = c.ask("fib 32");
    assert_eq!(r, "2178309");
    assert_eq!(c.ask("nonsense").0, "error: unknown request \"nonsense\"");

    assert_eq!(c.ask("quit").0, "bye");
    let report = server.join().unwrap();
    eprintln!("{report:?}");
    assert_eq!(report.cancelled, 1);
    assert!(report.preempted_slices > 10);
    assert_eq!(report.connections, 2);
}
