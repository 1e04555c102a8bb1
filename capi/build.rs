//! Gives `libtopoprobe.so` a versioned SONAME (`libtopoprobe.so.MAJOR`): programs linked
//! against it record that name, so an incompatible major version is never loaded in its
//! place. Installs put the library as `libtopoprobe.so.MAJOR.MINOR.PATCH` with the links
//! `libtopoprobe.so.MAJOR` and `libtopoprobe.so` (`scripts/install.sh`).

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets it");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtopoprobe.so.{major}");
}
