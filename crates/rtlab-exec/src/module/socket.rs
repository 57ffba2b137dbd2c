//! The UDP socket a sending module uses: bound to any address of the
//! destination's family, connected (the kernel routes once, and a peer's
//! port unreachable comes back as a refused send) and non-blocking (a
//! full buffer is a failed send, never a wait on the dispatcher's thread).

use std::io;
use std::net::{SocketAddr, UdpSocket};

pub fn connected_udp(dest: SocketAddr) -> io::Result<UdpSocket> {
    let any = if dest.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let socket = UdpSocket::bind(any)?;
    socket.connect(dest)?;
    socket.set_nonblocking(true)?;
    Ok(socket)
}
