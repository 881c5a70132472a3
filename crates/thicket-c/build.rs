//! Gives the shared library a SONAME, as LevelDB's `libleveldb.so.1` has,
//! so a program linked with `-lthicket` records `libthicket.so.1` (the
//! LevelDB 1.x C ABI it implements) and a packager can install versioned
//! files beside the `libthicket.so` link. Apple and Windows linkers name
//! libraries differently and are left alone.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let elf = !matches!(os.as_str(), "macos" | "ios" | "windows");
    if elf {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libthicket.so.1");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
