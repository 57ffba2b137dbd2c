//! Gives librtlab.so its soname. The ABI version is the number a program
//! linked against the library records (`librtlab.so.0`): it changes only
//! when a function, a struct or a code of include/rtlab.h changes in a way
//! an already compiled program would misread (docs/librtlab.md, "ABI").
//! The header's RTLAB_ABI_VERSION must equal it (a unit test checks).

const ABI_VERSION: u32 = 0;

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librtlab.so.{ABI_VERSION}");
    println!("cargo:rustc-env=RTLAB_ABI_VERSION={ABI_VERSION}");
    println!("cargo:rerun-if-changed=build.rs");
}
