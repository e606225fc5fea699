//! Link options of the `ccm-assets` binary that RUSTFLAGS must not be able to drop
//! (scripts/image.sh and the Containerfile set RUSTFLAGS, which replaces any Cargo config).

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    // Relative relocations packed as DT_RELR (glibc 2.36+, Debian 12; LLD and GNU ld 2.38+):
    // the dynamic loader reads a few KiB instead of ~240 KiB of RELA entries at every start,
    // which is both start-up time and resident pages (BENCHMARKS.md, "Generator").
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu")
    {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
