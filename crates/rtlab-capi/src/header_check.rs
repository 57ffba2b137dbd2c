//! include/rtlab.h is written by hand; these tests read it and check it
//! against the Rust side, the one place of truth: the codes
//! (`Error::code`), the struct layouts (field names, order, offsets and
//! sizes by the C rules), `RTLAB_PARAMS_INIT` (the Rust API's defaults) and
//! the ABI version (build.rs's soname).

use crate::errors::{describe, KINDS};
use crate::types::{RtlabParams, RtlabStats};
use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};

const HEADER: &str = include_str!("../../../include/rtlab.h");

/// The header without its comments.
fn code_of_header() -> String {
    let mut out = String::new();
    let mut rest = HEADER;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("*/").expect("an unclosed comment") + start + 2;
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `#define NAME VALUE` lines, VALUE without its parentheses.
fn defines() -> BTreeMap<String, String> {
    code_of_header()
        .lines()
        .filter_map(|line| line.trim().strip_prefix("#define "))
        .filter_map(|def| def.split_once(char::is_whitespace))
        .map(|(name, value)| {
            let value = value.trim();
            let value = value
                .strip_prefix('(')
                .and_then(|v| v.strip_suffix(')'))
                .unwrap_or(value);
            (name.to_string(), value.to_string())
        })
        .collect()
}

/// The fields of `struct NAME { … };`: (C type, name), in order.
fn fields(name: &str) -> Vec<(String, String)> {
    let code = code_of_header();
    let open = format!("struct {name} {{");
    let body = &code[code.find(&open).unwrap_or_else(|| panic!("no {open}")) + open.len()..];
    let body = &body[..body.find("};").unwrap()];
    body.split(';')
        .map(str::trim)
        .filter(|decl| !decl.is_empty())
        .map(|decl| {
            let at = decl.rfind([' ', '*']).unwrap() + 1;
            let ctype = decl[..at].split_whitespace().collect::<Vec<_>>().join(" ");
            (ctype.replace(" *", "*"), decl[at..].to_string())
        })
        .collect()
}

/// (name, offset, size) of each field of a C struct by the x86-64/aarch64
/// System V rules, and the struct's size.
fn c_layout(fields: &[(String, String)]) -> (Vec<(String, usize, usize)>, usize) {
    let mut offset: usize = 0;
    let mut align_max = 1;
    let mut out = Vec::new();
    for (ctype, name) in fields {
        let size = match ctype.as_str() {
            "uint64_t" | "int64_t" => 8,
            "uint32_t" | "int32_t" => 4,
            "const char*" => size_of::<*const u8>(),
            other => panic!("rtlab.h: type {other} of {name}: teach this test its size"),
        };
        offset = offset.next_multiple_of(size);
        align_max = align_max.max(size);
        out.push((name.clone(), offset, size));
        offset += size;
    }
    (out, offset.next_multiple_of(align_max))
}

/// (name, offset, size) of the named fields of a Rust struct.
macro_rules! rust_layout {
    ($ty:ty: $($field:ident),* $(,)?) => {{
        let value: $ty = unsafe { std::mem::zeroed() };
        vec![$((
            stringify!($field).to_string(),
            offset_of!($ty, $field),
            std::mem::size_of_val(&value.$field),
        )),*]
    }};
}

#[test]
fn the_codes_are_the_rust_apis() {
    let defines = defines();
    let header: BTreeMap<&str, &str> = defines
        .iter()
        .filter(|(name, _)| name.starts_with("RTLAB_E_"))
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    let rust: BTreeMap<&str, String> = KINDS
        .iter()
        .map(|kind| (describe(kind).0.to_str().unwrap(), kind.code().to_string()))
        .collect();
    assert_eq!(header.len(), rust.len(), "header {header:?}, Rust {rust:?}");
    for (name, code) in &rust {
        assert_eq!(header.get(name).copied(), Some(code.as_str()), "{name}");
    }
    assert_eq!(defines["RTLAB_OK"], "0");
}

#[test]
fn the_abi_version_is_the_sonames() {
    assert_eq!(defines()["RTLAB_ABI_VERSION"], env!("RTLAB_ABI_VERSION"));
}

#[test]
fn the_structs_have_the_rust_layouts() {
    let (c, size) = c_layout(&fields("rtlab_params"));
    let rust = rust_layout!(RtlabParams: period_ns, offset_ns, deadline_ns, budget_ns, cpu,
        priority, name, socket);
    assert_eq!(c, rust);
    assert_eq!(size, size_of::<RtlabParams>());

    let (c, size) = c_layout(&fields("rtlab_stats"));
    let rust: Vec<(String, usize, usize)> = RtlabStats::FIELDS
        .iter()
        .map(|&(name, offset)| (name.to_string(), offset, size_of::<u64>()))
        .collect();
    assert_eq!(c, rust);
    assert_eq!(size, size_of::<RtlabStats>());
}

#[test]
fn params_init_is_the_rust_apis_defaults() {
    let init = &defines()["RTLAB_PARAMS_INIT"];
    let values: Vec<&str> = init
        .trim_matches(|c| c == '{' || c == '}' || c == ' ')
        .split(',')
        .map(str::trim)
        .collect();
    let d = RtlabParams::defaults();
    let pointer = |p: *const std::ffi::c_char| if p.is_null() { "NULL" } else { "a pointer" };
    let rust = [
        d.period_ns.to_string(),
        d.offset_ns.to_string(),
        d.deadline_ns.to_string(),
        d.budget_ns.to_string(),
        d.cpu.to_string(),
        d.priority.to_string(),
        pointer(d.name).to_string(),
        pointer(d.socket).to_string(),
    ];
    assert_eq!(values, rust);
}

#[test]
fn the_header_names_the_default_socket_and_its_variable() {
    let socket_doc = HEADER.split("const char *socket;").next().unwrap();
    let socket_doc = &socket_doc[socket_doc.rfind("const char *name;").unwrap()..];
    let words = socket_doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let expected = format!("${},", rtlab_client::SOCKET_ENV);
    assert!(words.contains(&expected), "{words}");
    assert!(words.contains(rtlab_client::DEFAULT_SOCKET), "{words}");
}
