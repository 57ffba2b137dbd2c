//! Bytes on their way into a non-blocking TCP stream: written at once when
//! the socket takes them, else kept in a buffer of fixed size until it
//! does. Shared by the client (its requests) and the server (its replies).

use std::io::{ErrorKind, Write};

pub(crate) struct Outgoing {
    buf: Vec<u8>,
    pending: usize,
}

impl Outgoing {
    pub(crate) fn with_capacity(bytes: usize) -> Outgoing {
        Outgoing {
            buf: vec![0u8; bytes],
            pending: 0,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pending == 0
    }

    /// Sends `bytes` after what is pending; false when the stream is gone
    /// or the buffer has no room for what the socket would not take (a
    /// peer that does not read).
    pub(crate) fn send(&mut self, stream: &mut impl Write, bytes: &[u8]) -> bool {
        let mut written = 0;
        if self.pending == 0 {
            match stream.write(bytes) {
                Ok(n) => written = n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => return false,
            }
        }
        let rest = &bytes[written..];
        if self.pending + rest.len() > self.buf.len() {
            return false;
        }
        self.buf[self.pending..self.pending + rest.len()].copy_from_slice(rest);
        self.pending += rest.len();
        true
    }

    /// Writes what is pending, as far as the socket takes it; false when
    /// the stream is gone.
    pub(crate) fn flush(&mut self, stream: &mut impl Write) -> bool {
        while self.pending > 0 {
            match stream.write(&self.buf[..self.pending]) {
                Ok(0) => return false,
                Ok(n) => {
                    self.buf.copy_within(n..self.pending, 0);
                    self.pending -= n;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        true
    }
}
