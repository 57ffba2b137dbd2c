//! Traffic plans from captures and patterns (`rtlab traffic import|gen|
//! export`): real captures made with tcpdump and tshark (tests/data/,
//! make-captures.sh) read against tshark's own reading of them, every
//! prefix and thousands of mutations of a capture (an error or a plan,
//! never a panic, never a file left), generated patterns, the export and
//! import round trip, and the memory a long plan costs.

use rtlab_exec::plan::gen::SplitMix64;
use rtlab_exec::plan::{load, LoadedPlan};
use rtlab_exec::traffic::format::{digest, Stamp, TrafficData};
use rtlab_exec::traffic::gen::{Length, Pattern, Sizes, TrafficGen};
use rtlab_exec::traffic::pcap::{self, ExportAddressing, Filter, ImportError, ImportSummary};
use rtlab_exec::traffic::sink::PlanSink;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn import(file: &Path, filter: &Filter, out: &Path) -> Result<ImportSummary, ImportError> {
    let mut sink = PlanSink::create(out).unwrap();
    let summary = pcap::import(file, filter, &mut sink, |_| {})?;
    sink.finish(|_| {}).unwrap();
    Ok(summary)
}

/// One datagram as tshark read it.
struct Expected {
    time_ns: i128,
    src: SocketAddr,
    dst: SocketAddr,
    size: u16,
}

/// `epoch src sport dst dport udp.length` lines (make-captures.sh).
fn expected(file: &str) -> Vec<Expected> {
    let text = std::fs::read_to_string(data(&format!("{file}.expected"))).unwrap();
    text.lines()
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (seconds, fraction) = f[0].split_once('.').unwrap();
            let fraction = format!("{fraction:0<9}");
            let time_ns = seconds.parse::<i128>().unwrap() * 1_000_000_000
                + fraction[..9].parse::<i128>().unwrap();
            let addr =
                |ip: &str, port: &str| SocketAddr::new(ip.parse().unwrap(), port.parse().unwrap());
            Expected {
                time_ns,
                src: addr(f[1], f[2]),
                dst: addr(f[3], f[4]),
                size: f[5].parse::<u16>().unwrap() - 8,
            }
        })
        .collect()
}

fn flow_of(plan: &LoadedPlan, module: u16) -> (SocketAddr, SocketAddr) {
    let m = &plan.header.modules[usize::from(module)];
    assert_eq!(m.kind, "traffic");
    (
        m.setting("src").unwrap().parse().unwrap(),
        m.setting("dest").unwrap().parse().unwrap(),
    )
}

/// The plan of `file` holds tshark's datagrams: offsets from the first,
/// sizes from the UDP header, flows, payload digests (the sender's
/// payloads are `size` bytes of one value: the datagram's index).
fn check_against_tshark(file: &str, format: &str, resolution: &str, link: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.plan");
    let summary = import(&data(file), &Filter::default(), &out).unwrap();
    let want = expected(file);
    assert_eq!(summary.format, format, "{file}");
    assert_eq!(summary.resolution, resolution, "{file}");
    assert_eq!(summary.link_types, vec![link.to_string()], "{file}");
    assert_eq!(summary.kept, want.len() as u64, "{file}");
    assert_eq!(
        summary.out_of_order + summary.truncated + summary.filtered_out,
        0
    );
    let plan = load(&out).unwrap();
    assert_eq!(plan.events.len(), want.len() as u64);
    let flows: std::collections::HashSet<_> = want.iter().map(|e| (e.src, e.dst)).collect();
    assert_eq!(summary.flows, flows.len(), "{file}");
    for (i, e) in want.iter().enumerate() {
        let event = plan.events.event(i as u64);
        assert_eq!(
            i128::from(event.offset_ns),
            e.time_ns - want[0].time_ns,
            "{file}: datagram {i}"
        );
        let d = TrafficData::decode(&event.data).unwrap();
        assert_eq!(d.size, e.size, "{file}: datagram {i}");
        let index = (e.size - 10) / 7;
        assert_eq!(d.digest, digest(&vec![index as u8; usize::from(e.size)]));
        assert_eq!(
            flow_of(&plan, event.module),
            (e.src, e.dst),
            "{file}: datagram {i}"
        );
    }
}

#[test]
fn a_microsecond_pcap_with_icmp_in_it() {
    check_against_tshark("lo_us.pcap", "pcap", "us", "ethernet");
    let dir = tempfile::tempdir().unwrap();
    let s = import(
        &data("lo_us.pcap"),
        &Filter::default(),
        &dir.path().join("p"),
    )
    .unwrap();
    assert_eq!(
        (s.packets, s.not_udp),
        (60, 20),
        "ICMP port unreachable is not UDP"
    );
}

#[test]
fn a_nanosecond_pcap_of_ipv6() {
    check_against_tshark("lo_ns.pcap", "pcap", "ns", "ethernet");
}

#[test]
fn a_pcapng_with_nanoseconds() {
    check_against_tshark("lo.pcapng", "pcapng", "ns", "ethernet");
}

#[test]
fn linux_cooked_captures_v1_and_v2() {
    check_against_tshark("any_sll.pcap", "pcap", "us", "linux-sll");
    check_against_tshark("any_sll2.pcap", "pcap", "us", "linux-sll2");
}

#[test]
fn a_capture_cut_by_its_snap_length_keeps_the_real_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.plan");
    let s = import(&data("lo_ns_snap80.pcap"), &Filter::default(), &out).unwrap();
    // 80 bytes: Ethernet 14 + IPv6 40 + UDP 8 leave 18 bytes of payload.
    let want = expected("lo_ns.pcap");
    let cut = want.iter().filter(|e| e.size > 18).count() as u64;
    assert_eq!((s.kept, s.truncated), (20, cut));
    let plan = load(&out).unwrap();
    for (i, e) in want.iter().enumerate() {
        let d = TrafficData::decode(&plan.events.event(i as u64).data).unwrap();
        let index = (e.size - 10) / 7;
        let captured = usize::from(e.size.min(18));
        assert_eq!(
            (d.size, d.digest),
            (e.size, digest(&vec![index as u8; captured]))
        );
    }
}

#[test]
fn the_filter_keeps_what_it_says() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.plan");
    let filter = Filter::parse("udp and dst port 47002 and src host ::1").unwrap();
    let s = import(&data("lo.pcapng"), &filter, &out).unwrap();
    assert_eq!((s.kept, s.filtered_out, s.flows), (10, 30, 1));
    let plan = load(&out).unwrap();
    assert_eq!(
        flow_of(&plan, 0),
        (
            "[::1]:47100".parse().unwrap(),
            "[::1]:47002".parse().unwrap()
        )
    );
    let none = Filter::parse("port 9").unwrap();
    let e = import(&data("lo.pcapng"), &none, &dir.path().join("n.plan")).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("lo.pcapng: no UDP datagrams: 40 packets, 0 not UDP, 40 filtered out"),
        "{e}"
    );
    assert!(!dir.path().join("n.plan").exists());
}

#[test]
fn garbage_and_truncated_captures_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("capture.bin");
    std::fs::write(&garbage, [0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0]).unwrap();
    let out = dir.path().join("g.plan");
    let e = import(&garbage, &Filter::default(), &out).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: not a pcap or pcapng capture (first bytes 12 34 56 78)",
            garbage.display()
        )
    );
    let whole = std::fs::read(data("lo_us.pcap")).unwrap();
    let cut = dir.path().join("cut.pcap");
    // Cut inside the last record's data.
    std::fs::write(&cut, &whole[..whole.len() - 7]).unwrap();
    let e = import(&cut, &Filter::default(), &out)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("packet 60 at byte ")
            && e.ends_with("the file ends inside the packet record (a capture cut short?)"),
        "{e}"
    );
    assert!(!out.exists());
}

/// Imports `bytes` as a capture: an error or a plan, never a panic, and
/// nothing in `dir` but the plan when there is one.
fn import_anything(dir: &Path, bytes: &[u8]) -> bool {
    let input = dir.join("in.cap");
    let out = dir.join("out.plan");
    std::fs::write(&input, bytes).unwrap();
    let mut sink = PlanSink::create(&out).unwrap();
    let ok = match pcap::import(&input, &Filter::default(), &mut sink, |_| {}) {
        Ok(_) => {
            sink.finish(|_| {}).unwrap();
            load(&out).unwrap();
            true
        }
        Err(ImportError::Bad { message, .. }) => {
            assert!(!message.is_empty());
            drop(sink);
            false
        }
        Err(e) => panic!("not a bad-input error: {e}"),
    };
    assert_eq!(out.exists(), ok);
    let _ = std::fs::remove_file(&out);
    assert_eq!(
        std::fs::read_dir(dir).unwrap().count(),
        1,
        "only the input left"
    );
    ok
}

#[test]
fn every_prefix_of_a_capture_is_an_error_or_a_plan() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["lo.pcapng", "any_sll2.pcap"] {
        let whole = std::fs::read(data(name)).unwrap();
        let mut plans = 0;
        for len in 0..=whole.len() {
            plans += u32::from(import_anything(dir.path(), &whole[..len]));
        }
        assert!(
            plans >= 10,
            "{name}: whole-record prefixes import ({plans})"
        );
    }
}

#[test]
fn mutated_captures_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(20);
    for name in ["lo.pcapng", "lo_ns.pcap", "any_sll.pcap"] {
        let whole = std::fs::read(data(name)).unwrap();
        for _ in 0..700 {
            let mut bytes = whole.clone();
            for _ in 0..=rng.below_or_eq(7) {
                let at = rng.below_or_eq(bytes.len() as u64 - 1) as usize;
                match rng.below_or_eq(3) {
                    0 => bytes[at] ^= 1 << rng.below_or_eq(7),
                    1 => bytes[at] = 0xff,
                    2 => bytes[at] = rng.next_u64() as u8,
                    _ => bytes.truncate(at.max(1)),
                }
            }
            import_anything(dir.path(), &bytes);
        }
    }
}

fn gen(pattern: Pattern, length: Length) -> TrafficGen {
    TrafficGen {
        pattern,
        sizes: Sizes::Fixed(100),
        length,
        flows: 1,
        dest: None,
        seed: 42,
    }
}

fn write_gen(g: &TrafficGen, out: &Path) -> LoadedPlan {
    g.validate().unwrap();
    let mut sink = PlanSink::create(out).unwrap();
    let n = g.write(&mut sink, |_| {}).unwrap();
    let summary = sink.finish(|_| {}).unwrap();
    assert_eq!(summary.events, n);
    load(out).unwrap()
}

fn offsets(plan: &LoadedPlan) -> Vec<u64> {
    (0..plan.events.len())
        .map(|i| plan.events.event(i).offset_ns)
        .collect()
}

#[test]
fn generated_patterns_have_their_counts_means_and_flows() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let constant = write_gen(
        &TrafficGen {
            flows: 3,
            dest: Some("127.0.0.1:7000".parse().unwrap()),
            ..gen(
                Pattern::Constant { rate_pps: 3000.0 },
                Length::Duration(1_000_000_000),
            )
        },
        &p("c"),
    );
    assert_eq!(constant.events.len(), 3000);
    assert_eq!(offsets(&constant)[2999], 999_666_667);
    assert_eq!(constant.header.modules.len(), 3);
    for (i, m) in constant.header.modules.iter().enumerate() {
        assert_eq!(m.setting("dest"), Some("127.0.0.1:7000"));
        assert_eq!(constant.events.event(i as u64 + 3).module, i as u16);
    }
    let poisson = gen(
        Pattern::Poisson { rate_pps: 50_000.0 },
        Length::Count(100_001),
    );
    let a = write_gen(&poisson, &p("p1"));
    let mean = offsets(&a)[100_000] as f64 / 100_000.0;
    assert!((mean - 20_000.0).abs() < 400.0, "mean gap {mean} ns");
    let b = write_gen(&poisson, &p("p2"));
    assert_eq!(
        std::fs::read(p("p1")).unwrap(),
        std::fs::read(p("p2")).unwrap()
    );
    let other = write_gen(
        &TrafficGen {
            seed: 43,
            ..poisson.clone()
        },
        &p("p3"),
    );
    assert_ne!(offsets(&b), offsets(&other));
    let bursts = write_gen(
        &gen(
            Pattern::Bursts {
                burst: 16,
                gap_ns: 10_000,
                every_ns: 1_000_000,
            },
            Length::Count(160),
        ),
        &p("b"),
    );
    assert_eq!(offsets(&bursts)[159], 9_000_000 + 150_000);
    let on_off = write_gen(
        &gen(
            Pattern::OnOff {
                rate_pps: 100_000.0,
                on_ns: 1_000_000,
                off_ns: 4_000_000,
                exponential: true,
            },
            Length::Duration(5_000_000_000),
        ),
        &p("o"),
    );
    // On a fifth of the time at 100 kpps: about 100 000 packets.
    let n = on_off.events.len() as f64;
    assert!((n - 100_000.0).abs() < 10_000.0, "{n} packets");
    let uniform = write_gen(
        &TrafficGen {
            sizes: Sizes::Uniform { min: 64, max: 1400 },
            ..gen(Pattern::Constant { rate_pps: 1e6 }, Length::Count(100_000))
        },
        &p("u"),
    );
    let sizes: Vec<u16> = (0..100_000)
        .map(|i| {
            TrafficData::decode(&uniform.events.event(i).data)
                .unwrap()
                .size
        })
        .collect();
    let mean = sizes.iter().map(|&s| f64::from(s)).sum::<f64>() / 1e5;
    assert!((mean - 732.0).abs() < 732.0 * 0.02, "mean size {mean}");
    assert_eq!(
        (*sizes.iter().min().unwrap(), *sizes.iter().max().unwrap()),
        (64, 1400)
    );
}

/// A plan exported as a pcap and imported back: the same offsets, sizes
/// and flows, each payload the stamp and zeros.
fn round_trip(g: &TrafficGen, to: &str, from: &str, magic: u32) {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_gen(g, &dir.path().join("g.plan"));
    let pcap_file = dir.path().join("g.pcap");
    let addressing = ExportAddressing {
        to: Some(to.parse().unwrap()),
        from: from.parse().unwrap(),
        src_mac: [2, 0, 0, 0, 0, 1],
        dst_mac: [2, 0, 0, 0, 0, 2],
    };
    let frames = pcap::export(&dir.path().join("g.plan"), &addressing, 0xabcd, &pcap_file).unwrap();
    assert_eq!(frames, plan.events.len());
    let bytes = std::fs::read(&pcap_file).unwrap();
    assert_eq!(u32::from_le_bytes(bytes[..4].try_into().unwrap()), magic);
    let back_file = dir.path().join("back.plan");
    let s = import(&pcap_file, &Filter::default(), &back_file).unwrap();
    assert_eq!((s.kept, s.not_udp, s.truncated), (frames, 0, 0));
    let back = load(&back_file).unwrap();
    assert_eq!(offsets(&back), offsets(&plan));
    assert_eq!(back.header.modules.len(), usize::from(g.flows));
    for i in 0..frames {
        let (want, got) = (plan.events.event(i), back.events.event(i));
        let size = TrafficData::decode(&want.data).unwrap().size;
        let mut payload = vec![0u8; usize::from(size)];
        Stamp {
            stream: 0xabcd,
            sequence: i,
            planned_ns: want.offset_ns,
        }
        .write(&mut payload);
        let d = TrafficData::decode(&got.data).unwrap();
        assert_eq!((d.size, d.digest), (size, digest(&payload)), "frame {i}");
        let (src, dst) = flow_of(&back, got.module);
        assert_eq!(dst, to.parse().unwrap());
        let from: SocketAddr = from.parse().unwrap();
        assert_eq!(src.port(), from.port() + want.module);
    }
}

#[test]
fn export_then_import_gives_the_plan_back() {
    // Whole microseconds: a microsecond pcap.
    round_trip(
        &TrafficGen {
            flows: 2,
            sizes: Sizes::Uniform { min: 0, max: 1500 },
            ..gen(Pattern::Constant { rate_pps: 2000.0 }, Length::Count(500))
        },
        "10.0.0.2:7000",
        "10.0.0.1:5000",
        0xa1b2_c3d4,
    );
    // Nanoseconds, IPv6, the largest datagram.
    round_trip(
        &TrafficGen {
            sizes: Sizes::Uniform {
                min: 60_000,
                max: 65_507,
            },
            ..gen(Pattern::Poisson { rate_pps: 3000.0 }, Length::Count(50))
        },
        "[fd00::2]:7000",
        "[fd00::1]:5000",
        0xa1b2_3c4d,
    );
}

#[test]
fn export_names_what_it_cannot_address() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("g.plan");
    write_gen(
        &gen(Pattern::Constant { rate_pps: 10.0 }, Length::Count(3)),
        &plan,
    );
    let mut addressing = ExportAddressing {
        to: None,
        from: "10.0.0.1:5000".parse().unwrap(),
        src_mac: [2, 0, 0, 0, 0, 1],
        dst_mac: [2, 0, 0, 0, 0, 2],
    };
    let out = dir.path().join("x.pcap");
    let e = pcap::export(&plan, &addressing, 1, &out)
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("flow f0 has no dest=: give --to ADDR:PORT"),
        "{e}"
    );
    addressing.to = Some("[::1]:7000".parse().unwrap());
    let e = pcap::export(&plan, &addressing, 1, &out)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not of one IP version"), "{e}");
    assert!(!out.exists());
}

const CHILD: &str = "RTLAB_TEST_GEN_MEMORY";

fn vm_hwm_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Run alone in a child process (the peak is the whole process's).
#[test]
fn gen_memory_child() {
    let Some(out) = std::env::var_os(CHILD) else {
        return;
    };
    let before = vm_hwm_kb();
    let g = TrafficGen {
        flows: 4,
        sizes: Sizes::Uniform { min: 64, max: 1400 },
        ..gen(Pattern::Poisson { rate_pps: 1e6 }, Length::Count(3_000_000))
    };
    let mut sink = PlanSink::create(Path::new(&out)).unwrap();
    assert_eq!(g.write(&mut sink, |_| {}).unwrap(), 3_000_000);
    sink.finish(|_| {}).unwrap();
    println!("VmHWM growth {} kB", vm_hwm_kb() - before);
}

#[test]
fn generating_3m_packets_stays_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("big.plan");
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "gen_memory_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD, &out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&child.stderr)
    );
    let kb: u64 = stdout
        .split("VmHWM growth ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no figure in {stdout}"));
    assert!(kb < 64 * 1024, "peak RSS grew {kb} kB for 3 M packets");
    assert!(std::fs::metadata(&out).unwrap().len() > 3_000_000 * 24);
}
