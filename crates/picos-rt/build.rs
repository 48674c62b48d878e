//! Link options of the runtime image (the `picos-rt` binary for
//! x86_64-unknown-none; the host build of the library, for unit tests,
//! takes none).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("TARGET").as_deref() == Ok("x86_64-unknown-none") {
        // Every segment starts on a page of its own. The statics of `.data`
        // (3 KB: the locks a fork holds among them) then lie on one page
        // instead of straddling two, so that a fork's parent and child
        // each take one copy-on-write fault there, not two.
        println!("cargo:rustc-link-arg-bin=picos-rt=-zseparate-loadable-segments");
    }
}
