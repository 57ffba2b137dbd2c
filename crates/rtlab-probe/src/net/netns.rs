//! Two private network namespaces joined by a veth pair, so that the net
//! probe's messages cross a whole network stack (IP, neighbour, device
//! queues, softirq) as between two hosts, on one machine.
//!
//! The namespaces are anonymous: they live as long as their descriptors
//! (held by this process) and the threads inside them, and vanish with the
//! process however it ends, SIGKILL included. Nothing is added to the
//! host's own namespace, so nothing needs journaling or restoring.

use std::fs::File;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The client's and the server's addresses on the veth link.
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
/// The port rtlab's own server listens on inside its namespace.
pub const SERVER_PORT: u16 = 7700;
/// The veth ends' fixed MAC addresses and names (each inside its own
/// namespace, so the names never meet the host's).
pub const CLIENT_MAC: &str = "02:72:74:6c:00:01";
pub const SERVER_MAC: &str = "02:72:74:6c:00:02";
pub const CLIENT_DEVICE: &str = "rtlab-c";
pub const SERVER_DEVICE: &str = "rtlab-s";

/// The two namespaces, held open.
pub struct NetnsPair {
    client: OwnedFd,
    server: OwnedFd,
}

impl NetnsPair {
    /// Creates both namespaces and the link between them (needs
    /// CAP_SYS_ADMIN and CAP_NET_ADMIN, and iproute2's `ip`).
    pub fn create() -> anyhow::Result<NetnsPair> {
        let client = new_namespace()?;
        let server = new_namespace()?;
        let pair = NetnsPair { client, server };
        let server_path = format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            pair.server.as_raw_fd()
        );
        // Fixed MAC addresses and permanent neighbour entries: no ARP
        // exchange ever lands in a measured message.
        ip_batch(
            &pair.client,
            &format!(
                "link set lo up\n\
                 link add {CLIENT_DEVICE} address {CLIENT_MAC} type veth peer name {SERVER_DEVICE} address {SERVER_MAC} netns {server_path}\n\
                 addr add {CLIENT_ADDR}/30 dev {CLIENT_DEVICE}\n\
                 link set {CLIENT_DEVICE} up\n\
                 neigh replace {SERVER_ADDR} lladdr {SERVER_MAC} dev {CLIENT_DEVICE} nud permanent\n"
            ),
        )?;
        ip_batch(
            &pair.server,
            &format!(
                "link set lo up\n\
                 addr add {SERVER_ADDR}/30 dev {SERVER_DEVICE}\n\
                 link set {SERVER_DEVICE} up\n\
                 neigh replace {CLIENT_ADDR} lladdr {CLIENT_MAC} dev {SERVER_DEVICE} nud permanent\n"
            ),
        )?;
        // The kernel attaches a device's queue discipline asynchronously
        // after its carrier comes up; until then it drops what is sent.
        wait_until_up(&pair.client, CLIENT_DEVICE)?;
        wait_until_up(&pair.server, SERVER_DEVICE)?;
        Ok(pair)
    }

    /// Where rtlab's own server listens.
    pub fn server_address() -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(SERVER_ADDR, SERVER_PORT))
    }

    pub fn client(&self) -> &OwnedFd {
        &self.client
    }

    pub fn server(&self) -> &OwnedFd {
        &self.server
    }
}

/// Moves the calling thread into the namespace (sockets it creates after
/// this belong there).
pub fn enter(namespace: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: setns on a descriptor we own; it only affects this thread.
    if unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A fresh namespace, made by a short-lived thread so that no thread of
/// ours stays in it.
fn new_namespace() -> anyhow::Result<OwnedFd> {
    std::thread::spawn(|| -> std::io::Result<OwnedFd> {
        // SAFETY: unshare affects only this thread's network namespace.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(File::open("/proc/thread-self/ns/net")?.into())
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the thread creating a network namespace panicked"))?
    .map_err(|e| {
        if e.raw_os_error() == Some(libc::EPERM) {
            anyhow::anyhow!(
                "cannot create a network namespace: {e} (needs CAP_SYS_ADMIN: run as root, or give a server's address instead)"
            )
        } else {
            anyhow::anyhow!("cannot create a network namespace: {e}")
        }
    })
}

/// How long a new link may take to come up.
const LINK_UP_TIMEOUT: Duration = Duration::from_secs(3);

/// Waits until `device` is up with its real queue discipline attached
/// (`ip` shows `qdisc noop` until the kernel has activated it).
fn wait_until_up(namespace: &OwnedFd, device: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + LINK_UP_TIMEOUT;
    loop {
        let shown = ip_output(namespace, &["-o", "link", "show", "dev", device])?;
        if shown.contains("state UP") && !shown.contains("qdisc noop") {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the veth link {device} did not come up within {} s: {}",
            LINK_UP_TIMEOUT.as_secs(),
            shown.trim()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs `ip ARGS` inside `namespace` and returns what it printed.
fn ip_output(namespace: &OwnedFd, args: &[&str]) -> anyhow::Result<String> {
    let output = in_namespace(namespace, args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run `ip` (iproute2): {e}"))?;
    anyhow::ensure!(
        output.status.success(),
        "`ip {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// An `ip` command that runs inside `namespace`.
fn in_namespace(namespace: &OwnedFd, args: &[&str]) -> Command {
    let raw = namespace.as_raw_fd();
    let mut command = Command::new("ip");
    command.args(args);
    // SAFETY: between fork and exec only setns, a plain syscall; the
    // descriptor is still open in the child then (CLOEXEC acts at exec).
    unsafe {
        command.pre_exec(move || {
            if libc::setns(raw, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
}

/// Runs `ip -batch -` inside `namespace` with `commands` on its stdin.
fn ip_batch(namespace: &OwnedFd, commands: &str) -> anyhow::Result<()> {
    let mut child = in_namespace(namespace, &["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            anyhow::anyhow!("cannot run `ip` (iproute2) to set up the network namespaces: {e}")
        })?;
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(commands.as_bytes())?;
    let output = child.wait_with_output()?;
    anyhow::ensure!(
        output.status.success(),
        "setting up the network namespaces failed: `ip -batch -` said: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(())
}
