//! A traffic plan written as its packets come (a capture read, a stream
//! received, a pattern generated), in bounded memory: events go to an
//! unnamed spill file (O_TMPFILE: a killed rtlab leaves nothing behind)
//! while flows are declared as they appear; `finish` writes the header,
//! which needs the module table and the event count, then copies the
//! events after it, through [`rtlab_core::fsutil`] (a temporary file
//! renamed over the output).

use super::format::{TrafficData, KIND};
use crate::plan::binary::{encode_event, encode_header};
use crate::plan::check::MAX_OFFSET_NS;
use crate::plan::model::{ModuleDecl, PlanHeader, MAX_MODULES};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A flow: where its packets came from and where they went (either may
/// be unknown: a generated flow has neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub src: Option<SocketAddr>,
    pub dest: Option<SocketAddr>,
}

/// Why a plan could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("more than {MAX_MODULES} flows (a plan has at most {MAX_MODULES} modules)")]
    TooManyFlows,
    #[error("offset {offset_ns} ns is before the previous event's {previous_ns} ns")]
    Backwards { offset_ns: u64, previous_ns: u64 },
    #[error("offset {0} ns is past the largest a plan takes (2^62 ns, 146 years)")]
    TooLate(u64),
    #[error("event for flow {0}, which was never declared")]
    NoSuchFlow(u16),
    /// The output (or the spill beside it) could not be created.
    #[error("{path}: cannot write there: {source}")]
    Create { path: PathBuf, source: io::Error },
    /// Writing failed later (a full disk).
    #[error("{path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

/// What [`PlanSink::finish`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SinkSummary {
    pub events: u64,
    pub flows: usize,
    /// The plan file's size.
    pub file_bytes: u64,
    pub last_offset_ns: u64,
    /// UDP payload bytes of all events.
    pub payload_bytes: u64,
}

/// A binary traffic plan being written.
pub struct PlanSink {
    output: PathBuf,
    spill: BufWriter<File>,
    flows: HashMap<FlowKey, u16>,
    modules: Vec<ModuleDecl>,
    count: u64,
    last_offset_ns: u64,
    payload_bytes: u64,
    repeat_ns: Option<u64>,
}

impl PlanSink {
    /// A sink for `output` (not `-`: a plan is a file). The spill is made
    /// now, beside the output, so a directory that cannot be written fails
    /// before anything is recorded; the output itself appears only at
    /// [`finish`](Self::finish).
    pub fn create(output: &Path) -> Result<PlanSink, SinkError> {
        let create = |source| SinkError::Create {
            path: output.to_path_buf(),
            source,
        };
        if output == Path::new("-") {
            return Err(create(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a plan is written to a file, not to stdout",
            )));
        }
        // Found at `finish` only, a directory named as the output cost a
        // whole recording or import its plan.
        let trailing_slash = output.as_os_str().as_encoded_bytes().ends_with(b"/");
        if trailing_slash || output.is_dir() {
            return Err(create(io::Error::from_raw_os_error(libc::EISDIR)));
        }
        let dir = match output.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let spill = unnamed_file(dir)
            .or_else(|e| match e.raw_os_error() {
                // A filesystem without O_TMPFILE: spill to the temporary
                // directory instead (the output is still written beside it).
                Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) => unnamed_file(&std::env::temp_dir()),
                _ => Err(e),
            })
            .map_err(create)?;
        Ok(PlanSink {
            output: output.to_path_buf(),
            spill: BufWriter::with_capacity(1 << 20, spill),
            flows: HashMap::new(),
            modules: Vec::new(),
            count: 0,
            last_offset_ns: 0,
            payload_bytes: 0,
            repeat_ns: None,
        })
    }

    /// The module id of `key`'s flow, declared (`f0`, `f1`, ...) the first
    /// time it is seen.
    pub fn flow(&mut self, key: FlowKey) -> Result<u16, SinkError> {
        if let Some(&id) = self.flows.get(&key) {
            return Ok(id);
        }
        self.declare(key)
    }

    /// A new flow for `key` even when one was declared for it already
    /// (`traffic gen --flows 4 --dest X`: four flows to one address);
    /// [`flow`](Self::flow) then finds the first of them.
    pub fn declare(&mut self, key: FlowKey) -> Result<u16, SinkError> {
        if self.modules.len() >= MAX_MODULES {
            return Err(SinkError::TooManyFlows);
        }
        let id = self.modules.len() as u16;
        let mut settings = Vec::new();
        if let Some(dest) = key.dest {
            settings.push(("dest".to_string(), dest.to_string()));
        }
        if let Some(src) = key.src {
            settings.push(("src".to_string(), src.to_string()));
        }
        self.modules.push(ModuleDecl {
            id,
            name: format!("f{id}"),
            kind: KIND.to_string(),
            settings,
        });
        self.flows.entry(key).or_insert(id);
        Ok(id)
    }

    /// Appends one datagram; offsets never decrease.
    pub fn push(
        &mut self,
        offset_ns: u64,
        module: u16,
        data: TrafficData,
    ) -> Result<(), SinkError> {
        if usize::from(module) >= self.modules.len() {
            return Err(SinkError::NoSuchFlow(module));
        }
        if offset_ns > MAX_OFFSET_NS {
            return Err(SinkError::TooLate(offset_ns));
        }
        if offset_ns < self.last_offset_ns {
            return Err(SinkError::Backwards {
                offset_ns,
                previous_ns: self.last_offset_ns,
            });
        }
        self.spill
            .write_all(&encode_event(&data.event(offset_ns, module)))
            .map_err(|source| SinkError::Write {
                path: self.output.clone(),
                source,
            })?;
        self.last_offset_ns = offset_ns;
        self.count += 1;
        self.payload_bytes += u64::from(data.size);
        Ok(())
    }

    /// The plan repeats with this period (`plan` format's `repeat`).
    pub fn set_repeat(&mut self, repeat_ns: Option<u64>) {
        self.repeat_ns = repeat_ns;
    }

    /// Events pushed so far.
    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Flows declared so far.
    pub fn flows(&self) -> usize {
        self.modules.len()
    }

    /// Offset of the last event pushed.
    pub fn last_offset_ns(&self) -> u64 {
        self.last_offset_ns
    }

    /// Writes the plan: header, then the spilled events. `progress` is
    /// called with the events copied so far.
    pub fn finish(self, mut progress: impl FnMut(u64)) -> Result<SinkSummary, SinkError> {
        let PlanSink {
            output,
            spill,
            modules,
            count,
            last_offset_ns,
            payload_bytes,
            repeat_ns,
            ..
        } = self;
        let failed = |source| SinkError::Write {
            path: output.clone(),
            source,
        };
        let mut spill = spill.into_inner().map_err(|e| failed(e.into_error()))?;
        spill.seek(SeekFrom::Start(0)).map_err(failed)?;
        let header = PlanHeader { modules, repeat_ns };
        let head = encode_header(&header, count)
            .map_err(|e| failed(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
        let mut created = false;
        rtlab_core::fsutil::write_atomic(&output, |out| {
            created = true;
            out.write_all(&head)?;
            let mut copied = 0u64;
            let mut buffer = vec![0u8; crate::plan::binary::EVENT_BYTES * 65_536];
            let mut reader = io::BufReader::new(&mut spill);
            loop {
                let n = read_full(&mut reader, &mut buffer)?;
                if n == 0 {
                    break;
                }
                out.write_all(&buffer[..n])?;
                copied += (n / crate::plan::binary::EVENT_BYTES) as u64;
                progress(copied);
            }
            Ok(())
        })
        .map_err(|source| {
            if created {
                SinkError::Write {
                    path: output.clone(),
                    source,
                }
            } else {
                SinkError::Create {
                    path: output.clone(),
                    source,
                }
            }
        })?;
        let file_bytes = std::fs::metadata(&output).map(|m| m.len()).unwrap_or(0);
        Ok(SinkSummary {
            events: count,
            flows: header.modules.len(),
            file_bytes,
            last_offset_ns,
            payload_bytes,
        })
    }
}

/// An unnamed file in `dir` (O_TMPFILE, 0600): gone when closed, even by
/// a SIGKILL.
fn unnamed_file(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(dir)
}

/// Reads until `buffer` is full or the end: whole events per chunk (and
/// whole headers for the capture reader); the bytes read.
pub(crate) fn read_full(reader: &mut impl io::Read, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::load;

    #[test]
    fn flows_and_events_come_back_from_the_plan_written() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("t.plan");
        let mut sink = PlanSink::create(&out).unwrap();
        let a = sink
            .flow(FlowKey {
                src: Some("10.0.0.1:5000".parse().unwrap()),
                dest: Some("10.0.0.2:7000".parse().unwrap()),
            })
            .unwrap();
        let b = sink
            .flow(FlowKey {
                src: None,
                dest: None,
            })
            .unwrap();
        assert_eq!((a, b), (0, 1));
        for i in 0..200_000u64 {
            let data = TrafficData {
                size: (i % 1400) as u16,
                digest: i,
            };
            sink.push(i * 1_000, (i % 2) as u16, data).unwrap();
        }
        assert!(matches!(
            sink.push(5, 0, TrafficData::default()),
            Err(SinkError::Backwards { .. })
        ));
        assert!(matches!(
            sink.push(1 << 60, 9, TrafficData::default()),
            Err(SinkError::NoSuchFlow(9))
        ));
        assert!(!out.exists(), "nothing appears before finish");
        let summary = sink.finish(|_| {}).unwrap();
        assert_eq!(summary.events, 200_000);
        let plan = load(&out).unwrap();
        assert_eq!(
            plan.header.modules[0].setting("dest"),
            Some("10.0.0.2:7000")
        );
        assert_eq!(plan.header.modules[0].setting("src"), Some("10.0.0.1:5000"));
        assert_eq!(plan.header.modules[1].settings, vec![]);
        let last = plan.events.event(199_999);
        assert_eq!(last.offset_ns, 199_999_000);
        assert_eq!(
            TrafficData::decode(&last.data).unwrap(),
            TrafficData {
                size: (199_999 % 1400) as u16,
                digest: 199_999
            }
        );
        // Nothing but the plan in the directory: the spill had no name.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_directory_as_the_output_fails_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        for output in [sub.clone(), dir.path().join("new/")] {
            let e = PlanSink::create(&output).err().unwrap();
            assert!(e.to_string().contains("Is a directory"), "{e}");
        }
    }

    #[test]
    fn a_directory_that_does_not_exist_fails_at_once() {
        let e = PlanSink::create(Path::new("/nonexistent/dir/t.plan"))
            .err()
            .unwrap();
        assert!(
            e.to_string()
                .starts_with("/nonexistent/dir/t.plan: cannot write there"),
            "{e}"
        );
    }
}
