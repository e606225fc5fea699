//! The `ccm-assets` binary: everything lives in the library's `cli` module.

fn main() -> std::process::ExitCode {
    ccm_assets::cli::main()
}
