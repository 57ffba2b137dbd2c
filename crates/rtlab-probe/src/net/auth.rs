//! Shared-key authentication of exchange datagrams: an HMAC-SHA256 tag,
//! truncated to 128 bits, over every byte before it ends each datagram.

use super::wire::TAG_LEN;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Shortest key accepted, bytes.
pub const MIN_KEY_BYTES: usize = 16;

/// A key file is a key, not a document: larger files are refused.
const MAX_KEY_FILE_BYTES: u64 = 4096;

/// Reads a whole file of at most `limit` bytes (a device such as
/// /dev/zero never ends: it is refused, not read forever).
fn read_at_most(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(limit + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::other(format!(
            "larger than {limit} bytes: not a key"
        )));
    }
    Ok(bytes)
}

/// A key ready to sign and verify; cloning its keyed state per datagram
/// costs no allocation.
#[derive(Clone)]
pub struct Key {
    keyed: Hmac<Sha256>,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    pub fn new(secret: &[u8]) -> Result<Key, String> {
        if secret.len() < MIN_KEY_BYTES {
            return Err(format!(
                "the key is {} bytes; at least {MIN_KEY_BYTES} are needed",
                secret.len()
            ));
        }
        let keyed = Hmac::<Sha256>::new_from_slice(secret)
            .map_err(|_| "HMAC refused the key".to_string())?;
        Ok(Key { keyed })
    }

    /// Reads a key file: 32 or more hex digits on one line, or else the
    /// file's raw bytes. Returns the key and a warning when the file can be
    /// read by others than its owner.
    pub fn load(path: &Path) -> Result<(Key, Option<String>), String> {
        let shown = path.display();
        let bytes = read_at_most(path, MAX_KEY_FILE_BYTES)
            .map_err(|e| format!("cannot read the key file {shown}: {e}"))?;
        let text = std::str::from_utf8(&bytes).ok().map(str::trim);
        let secret = match text {
            Some(t)
                if t.len() >= 2 * MIN_KEY_BYTES
                    && t.len() % 2 == 0
                    && t.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                (0..t.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&t[i..i + 2], 16).expect("hex digits"))
                    .collect()
            }
            _ => bytes,
        };
        let key = Key::new(&secret).map_err(|why| format!("the key file {shown}: {why}"))?;
        let warning = std::fs::metadata(path)
            .ok()
            .filter(|meta| meta.permissions().mode() & 0o077 != 0)
            .map(|meta| {
                format!(
                    "the key file {shown} can be read by others (mode {:o}): chmod 600 it",
                    meta.permissions().mode() & 0o777
                )
            });
        Ok((key, warning))
    }

    /// Writes the tag over `datagram[..len - 16]` into its last 16 bytes.
    pub fn sign(&self, datagram: &mut [u8]) {
        let body = datagram.len() - TAG_LEN;
        let mut mac = self.keyed.clone();
        mac.update(&datagram[..body]);
        let tag = mac.finalize().into_bytes();
        datagram[body..].copy_from_slice(&tag[..TAG_LEN]);
    }

    /// Whether the last 16 bytes are the tag of the rest (in constant time).
    pub fn verify(&self, datagram: &[u8]) -> bool {
        if datagram.len() < TAG_LEN {
            return false;
        }
        let body = datagram.len() - TAG_LEN;
        let mut mac = self.keyed.clone();
        mac.update(&datagram[..body]);
        mac.verify_truncated_left(&datagram[body..]).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_datagram_verifies_and_any_changed_bit_does_not() {
        let key = Key::new(b"0123456789abcdef").unwrap();
        let mut datagram = vec![3u8; 64];
        key.sign(&mut datagram);
        assert!(key.verify(&datagram));
        for byte in 0..datagram.len() {
            let mut changed = datagram.clone();
            changed[byte] ^= 0x10;
            assert!(
                !key.verify(&changed),
                "byte {byte} changed and still verified"
            );
        }
        let other = Key::new(b"0123456789abcdeX").unwrap();
        assert!(!other.verify(&datagram));
    }

    #[test]
    fn key_files_are_hex_or_raw_and_short_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let hex = dir.path().join("hex");
        std::fs::write(&hex, "00112233445566778899aabbccddeeff\n").unwrap();
        std::fs::set_permissions(&hex, std::fs::Permissions::from_mode(0o600)).unwrap();
        let (from_hex, warning) = Key::load(&hex).unwrap();
        assert!(warning.is_none());
        let raw: Vec<u8> = (0..16).map(|i| i * 0x11).collect();
        let mut datagram = vec![0u8; 48];
        Key::new(&raw).unwrap().sign(&mut datagram);
        assert!(from_hex.verify(&datagram), "hex digits are the key's bytes");

        let short = dir.path().join("short");
        std::fs::write(&short, "tooshort").unwrap();
        let err = Key::load(&short).unwrap_err();
        assert!(
            err.contains("short") && err.contains("at least 16"),
            "{err}"
        );

        let open = dir.path().join("open");
        std::fs::write(&open, "a raw key of more than sixteen bytes").unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(Key::load(&open).unwrap().1.unwrap().contains("chmod 600"));

        let missing = Key::load(&dir.path().join("missing")).unwrap_err();
        assert!(missing.contains("cannot read the key file"), "{missing}");
    }
}
