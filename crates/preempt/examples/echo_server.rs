//! A small line-based TCP server that runs every request as a preemptible
//! function with a time budget, on one thread.
//!
//! Requests (one per line): `echo TEXT` → `TEXT`; `fib N` → the N-th
//! Fibonacci number, computed the slow way; `loop` → spins forever; `quit` →
//! `bye`, and the server stops. A request that has not finished after
//! `max_request_us` of budget in all is cancelled and answered `cancelled`.
//!
//! Each turn of the event loop gives every unfinished request one slice of
//! `budget_us`, so a request that spins cannot hold up the others for more
//! than about one budget per turn.
//!
//! Run: `cargo run --release -p preempt --example echo_server [SECONDS]`
//! (it listens on 127.0.0.1 on an ephemeral port, prints it, and stops after
//! SECONDS, 30 by default), then e.g. `printf 'loop\necho hi\n' | nc 127.0.0.1 PORT`.
//! tests/server.rs runs it in-process.

use preempt::{launch, Continuation, Outcome};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Server settings.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Budget of one slice, µs.
    pub budget_us: u64,
    /// Total budget of one request before it is cancelled, µs.
    pub max_request_us: u64,
    /// The server stops by itself after this long.
    pub run_for: Duration,
}

/// What the server did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Report {
    pub connections: u64,
    pub requests: u64,
    pub finished_in_first_slice: u64,
    pub preempted_slices: u64,
    pub cancelled: u64,
}

struct Job {
    cont: Continuation<String>,
    used_us: u64,
}

struct Conn {
    stream: TcpStream,
    inbuf: Vec<u8>,
    outbuf: Vec<u8>,
    job: Option<Job>,
    closed: bool,
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

/// The request handler; runs as a preemptible function.
fn handle(line: String) -> String {
    let line = line.trim();
    if let Some(text) = line.strip_prefix("echo ") {
        text.to_string()
    } else if let Some(n) = line.strip_prefix("fib ") {
        match n.trim().parse::<u64>() {
            Ok(n) if n <= 90 => fib(std::hint::black_box(n)).to_string(),
            _ => "error: bad number".to_string(),
        }
    } else if line == "loop" {
        let mut x = 0u64;
        loop {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    } else {
        format!("error: unknown request {line:?}")
    }
}

/// Serves on `listener` until `stop` is set, a client sends `quit`, or
/// `cfg.run_for` has passed.
pub fn serve(listener: TcpListener, cfg: Config, stop: Arc<AtomicBool>) -> io::Result<Report> {
    listener.set_nonblocking(true)?;
    let deadline = Instant::now() + cfg.run_for;
    let mut conns: Vec<Conn> = Vec::new();
    let mut report = Report::default();
    let mut quit = false;
    while !quit && !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        // Wait for I/O; do not wait at all while some request still runs.
        let busy = conns
            .iter()
            .any(|c| c.job.is_some() || c.inbuf.contains(&b'\n'));
        let mut fds = vec![libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        for c in &conns {
            let mut events = libc::POLLIN;
            if !c.outbuf.is_empty() {
                events |= libc::POLLOUT;
            }
            fds.push(libc::pollfd {
                fd: c.stream.as_raw_fd(),
                events,
                revents: 0,
            });
        }
        let timeout_ms = if busy { 0 } else { 10 };
        // SAFETY: `fds` is a valid array of pollfd for the duration of the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return Err(io::Error::last_os_error());
        }

        // New connections.
        loop {
            match listener.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(true)?;
                    s.set_nodelay(true)?;
                    report.connections += 1;
                    conns.push(Conn {
                        stream: s,
                        inbuf: Vec::new(),
                        outbuf: Vec::new(),
                        job: None,
                        closed: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }

        for c in conns.iter_mut() {
            // Read what arrived.
            let mut buf = [0u8; 4096];
            loop {
                match c.stream.read(&mut buf) {
                    Ok(0) => {
                        c.closed = true;
                        break;
                    }
                    Ok(k) => c.inbuf.extend_from_slice(&buf[..k]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => {
                        c.closed = true;
                        break;
                    }
                }
            }

            // Give the running request one slice, or start the next one.
            if let Some(job) = c.job.as_mut() {
                match job.cont.resume(cfg.budget_us) {
                    Ok(Some(resp)) => {
                        c.outbuf.extend_from_slice(resp.as_bytes());
                        c.outbuf.push(b'\n');
                        c.job = None;
                    }
                    Ok(None) => {
                        report.preempted_slices += 1;
                        job.used_us += cfg.budget_us;
                        if job.used_us >= cfg.max_request_us {
                            let job = c.job.take().unwrap();
                            // SAFETY: handlers own their inputs and share
                            // nothing with the server or other requests.
                            unsafe { job.cont.cancel() };
                            report.cancelled += 1;
                            c.outbuf.extend_from_slice(b"cancelled\n");
                        }
                    }
                    Err(e) => {
                        c.outbuf
                            .extend_from_slice(format!("error: {e}\n").as_bytes());
                        c.job = None;
                    }
                }
            } else if let Some(pos) = c.inbuf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = c.inbuf.drain(..=pos).collect();
                let line = String::from_utf8_lossy(&line).trim().to_string();
                report.requests += 1;
                if line == "quit" {
                    c.outbuf.extend_from_slice(b"bye\n");
                    quit = true;
                } else {
                    match launch(move || handle(line), cfg.budget_us) {
                        Ok(Outcome::Done(resp)) => {
                            report.finished_in_first_slice += 1;
                            c.outbuf.extend_from_slice(resp.as_bytes());
                            c.outbuf.push(b'\n');
                        }
                        Ok(Outcome::Pending(cont)) => {
                            report.preempted_slices += 1;
                            c.job = Some(Job {
                                cont,
                                used_us: cfg.budget_us,
                            });
                        }
                        Err(e) => c
                            .outbuf
                            .extend_from_slice(format!("error: {e}\n").as_bytes()),
                    }
                }
            }

            // Write what is ready.
            while !c.outbuf.is_empty() {
                match c.stream.write(&c.outbuf) {
                    Ok(k) => {
                        c.outbuf.drain(..k);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        c.closed = true;
                        c.outbuf.clear();
                    }
                }
            }
        }

        // Drop connections that are closed and have nothing left to do.
        conns.retain(|c| {
            !(c.closed && c.outbuf.is_empty() && c.job.is_none() && !c.inbuf.contains(&b'\n'))
        });
    }
    // Flush the last answers (e.g. "bye") and cancel what still runs.
    for c in conns.iter_mut() {
        let _ = c.stream.set_nonblocking(false);
        let _ = c.stream.write_all(&c.outbuf);
        if let Some(job) = c.job.take() {
            // SAFETY: as above.
            unsafe { job.cont.cancel() };
            report.cancelled += 1;
        }
    }
    Ok(report)
}

#[allow(dead_code)]
fn main() -> io::Result<()> {
    let seconds = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let listener = TcpListener::bind("127.0.0.1:0")?;
    println!(
        "listening on {} for {seconds} s (budget 2 ms per slice, 500 ms per request)",
        listener.local_addr()?
    );
    let cfg = Config {
        budget_us: 2_000,
        max_request_us: 500_000,
        run_for: Duration::from_secs(seconds),
    };
    let report = serve(listener, cfg, Arc::new(AtomicBool::new(false)))?;
    println!("{report:?}");
    Ok(())
}
