//! Response compression as the apiserver does it (`deferredResponseWriter`):
//! gzip when the client accepts it (`request::accepts_gzip`) and the body is
//! over 128 KiB; never for watches. And gzip bodies stitched from pieces
//! compressed apart.

use crate::encode::recycle::{self, NoMemory};
use bytes::Bytes;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::Write;

/// Bodies this size or smaller go out as they are.
pub const THRESHOLD: usize = 128 * 1024;

/// The body gzipped at zlib-rs's level 2. Its level 1 is zlib-ng's "quick"
/// strategy, whose output is ~45% bigger (a 10k-pod list: 12.8% of the
/// JSON against 8.7%, measured in benches/micro.rs) for 25% less time;
/// level 2 is zlib's classic fastest deflate, which the apiserver's level 1
/// resembles (v1.20 uses 4; current apiservers 1). Kept list bodies are
/// compressed once per version, so the ratio is what counts.
pub fn gzip(body: &[u8]) -> Result<Bytes, NoMemory> {
    gzip_at(body, LEVEL)
}

/// The level whole bodies are gzipped at (and streamed ones:
/// `stream`).
pub const LEVEL: Compression = Compression::new(2);

/// The body gzipped at `level`, into memory had fallibly.
pub fn gzip_at(body: &[u8], level: Compression) -> Result<Bytes, NoMemory> {
    let mut enc = GzEncoder::new(Fallible(recycle::buffer(body.len() / 8)?), level);
    let refused = |e| refused(e, body.len());
    enc.write_all(body).map_err(refused)?;
    let out = recycle::freeze(enc.finish().map_err(refused)?.0);
    crate::metrics::gzip_bytes(body.len(), out.len());
    Ok(out)
}

/// The [`NoMemory`] a `Fallible` failed with: the only error writing to
/// one has (else `NoMemory` for `len`, the bytes being compressed).
fn refused(e: std::io::Error, len: usize) -> NoMemory {
    e.into_inner()
        .and_then(|e| e.downcast::<NoMemory>().ok())
        .map_or(NoMemory { bytes: len }, |e| *e)
}

/// A `Vec` that grows fallibly: writing past what can be had is an
/// `OutOfMemory` error carrying the [`NoMemory`].
struct Fallible(Vec<u8>);

impl Write for Fallible {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        recycle::room(&mut self.0, buf.len())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::OutOfMemory, e))?;
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The level pieces are compressed at. A piece costs ~20 us whatever the
/// level (setting up the compressor and its window dominates), and level 6
/// makes a 10k-pod list 9.7% of its JSON against level 2's 10.7% (whole
/// list at level 2: 8.7%; benches/micro.rs).
const PIECE_LEVEL: u32 = 6;

thread_local! {
    /// The compressor pieces are made with, one per thread, reset between
    /// pieces. A new one for each piece allocated and zeroed deflate's
    /// ~270 KiB of state every time, and each piece kept (a few hundred
    /// bytes) landed in the hole the last one left: making a 2,000-pod
    /// type's pieces grew the heap by ~600 MB that was never given back
    /// (cli/tests/load.rs, perf's page faults all in `deflate::init`).
    /// Reused, the state is reset in place: no slower (benches/micro.rs
    /// "compress every item as a piece", 10k pods: 569 ms against 592 ms
    /// for a new compressor each, the same machine and hour).
    static PIECE_COMPRESSOR: std::cell::RefCell<flate2::Compress> =
        std::cell::RefCell::new(flate2::Compress::new(Compression::new(PIECE_LEVEL), false));
}

/// A run of bytes compressed on its own, to be put together with others
/// into one gzip body by [`stitch`]: raw deflate blocks that end on a byte
/// boundary (a sync flush) and are never final, with the CRC-32 and length
/// of what they decompress to.
#[derive(Debug)]
pub struct Piece {
    deflate: Bytes,
    /// CRC-32 of what it decompresses to.
    crc: u32,
    /// How many bytes it decompresses to.
    plain: u64,
    /// What a preceding CRC is multiplied by to be followed by those bytes
    /// (see [`crc32`]): made with the piece, so that stitching thousands
    /// of pieces costs a multiplication each.
    shift: u32,
}

impl Piece {
    /// `parts`, one after the other, compressed as if they followed
    /// `before` in the body: matches may reach back into it, so the piece
    /// is only valid right after exactly those bytes (empty: anywhere).
    pub fn new(before: &[u8], parts: &[&[u8]]) -> Piece {
        PIECE_COMPRESSOR.with_borrow_mut(|z| {
            // Reset, it is a fresh one (deflateReset): the same bytes out.
            z.reset();
            Piece::with(z, before, parts)
        })
    }

    fn with(z: &mut flate2::Compress, before: &[u8], parts: &[&[u8]]) -> Piece {
        use flate2::FlushCompress;
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let window = &before[before.len().saturating_sub(32 * 1024)..];
        if !window.is_empty() {
            // zlib-rs takes a dictionary before any input; it cannot fail.
            let _ = z.set_dictionary(window);
        }
        let mut out = Vec::with_capacity(len / 4 + 64);
        let mut crc = flate2::Crc::new();
        for (i, part) in parts.iter().enumerate() {
            crc.update(part);
            let flush = if i + 1 == parts.len() {
                FlushCompress::Sync
            } else {
                FlushCompress::None
            };
            let mut rest: &[u8] = part;
            loop {
                out.reserve(rest.len() / 4 + 64);
                let taken = z.total_in();
                // Compressing into a Vec with room cannot fail.
                let _ = z.compress_vec(rest, &mut out, flush);
                rest = &rest[(z.total_in() - taken) as usize..];
                // All input taken, and the flush fitted with room to spare.
                if rest.is_empty() && out.len() < out.capacity() {
                    break;
                }
            }
        }
        Piece {
            deflate: Bytes::from(out),
            crc: crc.sum(),
            plain: len as u64,
            shift: crc32::shift(len as u64),
        }
    }

    /// Its compressed size.
    pub fn len(&self) -> usize {
        self.deflate.len()
    }

    pub fn is_empty(&self) -> bool {
        self.deflate.is_empty()
    }
}

/// One gzip member of the pieces' bytes in order: a header, the pieces as
/// they are, an empty final block, and the CRC-32 and length combined from
/// theirs. No byte is compressed again.
pub fn stitch<'a>(pieces: impl IntoIterator<Item = &'a Piece> + Clone) -> Result<Bytes, NoMemory> {
    // Header: magic, deflate, no flags, no mtime, no extra flags, OS unknown
    // (what Go's gzip writer sends).
    const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    // BFINAL=1, fixed Huffman, end of block: zlib's own closing bytes.
    const LAST_BLOCK: [u8; 2] = [0x03, 0x00];
    let len: usize = pieces.clone().into_iter().map(Piece::len).sum();
    let mut out = recycle::buffer(HEADER.len() + len + LAST_BLOCK.len() + 8)?;
    out.extend_from_slice(&HEADER);
    let (mut crc, mut plain) = (0u32, 0u64);
    for p in pieces {
        out.extend_from_slice(&p.deflate);
        crc = crc32::combine(crc, p.crc, p.shift);
        plain += p.plain;
    }
    out.extend_from_slice(&LAST_BLOCK);
    out.extend_from_slice(&crc.to_le_bytes());
    // ISIZE is the length modulo 2^32.
    out.extend_from_slice(&(plain as u32).to_le_bytes());
    crate::metrics::gzip_bytes(plain as usize, out.len());
    Ok(recycle::freeze(out))
}

/// CRC-32 (gzip's, bit-reflected) arithmetic as zlib's crc32_combine_gen
/// and crc32_combine_op do it: the CRC of A followed by B is A's CRC
/// multiplied by x^(8·len(B)), plus B's CRC, all modulo the polynomial.
/// With x^(8·len(B)) made once per piece, a combination is one product
/// instead of the O(log len) squarings of a plain combine (which were an
/// eighth of stitching a 10k-pod list, perf).
mod crc32 {
    const POLY: u32 = 0xedb8_8320;

    /// a·b modulo the polynomial; bit 31 is x^0.
    const fn mul(a: u32, mut b: u32) -> u32 {
        if a == 0 {
            return 0;
        }
        let mut m = 1u32 << 31;
        let mut p = 0;
        loop {
            if a & m != 0 {
                p ^= b;
                if a & (m - 1) == 0 {
                    return p;
                }
            }
            m >>= 1;
            b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
        }
    }

    /// x^(2^k) modulo the polynomial, for k in 0..32 (the powers repeat
    /// after that as far as any length here needs).
    const X2N: [u32; 32] = {
        let mut t = [0; 32];
        let mut p = 1u32 << 30; // x^1
        let mut k = 0;
        while k < 32 {
            t[k] = p;
            p = mul(p, p);
            k += 1;
        }
        t
    };

    /// x^(2^32), the power after the table's last.
    #[cfg(test)]
    pub(super) fn past_the_table() -> u32 {
        mul(X2N[31], X2N[31])
    }

    /// x^(8·len): what a CRC is multiplied by to be followed by `len` bytes.
    pub fn shift(len: u64) -> u32 {
        let (mut n, mut k, mut p) = (len, 3, 1u32 << 31);
        while n != 0 {
            if n & 1 != 0 {
                p = mul(X2N[k & 31], p);
            }
            n >>= 1;
            k += 1;
        }
        p
    }

    /// The CRC of A followed by B, from A's CRC, B's and B's [`shift`].
    pub fn combine(a: u32, b: u32, b_shift: u32) -> u32 {
        mul(b_shift, a) ^ b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    fn gunzip(z: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        GzDecoder::new(z).read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn stitched_pieces_decompress_to_their_bytes_in_order() {
        let items: Vec<Vec<u8>> = (0..50)
            .map(|i| {
                format!(
                    "{{\"name\":\"pod-{i}\",\"spec\":{{\"x\":\"{}\"}}}}",
                    "ab".repeat(i * 37)
                )
                .into_bytes()
            })
            .collect();
        let mut pieces = vec![Piece::new(b"", &[b"{\"items\":["])];
        for (i, item) in items.iter().enumerate() {
            pieces.push(match i {
                0 => Piece::new(b"{\"items\":[", &[item]),
                // Each after its predecessor only: the window is that item.
                _ => Piece::new(&items[i - 1], &[b",", item]),
            });
        }
        pieces.push(Piece::new(b"", &[b"]}"]));
        let z = stitch(&pieces).unwrap();
        let mut want = b"{\"items\":[".to_vec();
        want.extend(items.join(&b","[..]));
        want.extend(b"]}");
        assert_eq!(gunzip(&z), want);
        // Matches into the predecessor made the pieces small.
        let sizes: usize = pieces.iter().map(Piece::len).sum();
        assert!(sizes * 4 < want.len(), "{sizes} of {}", want.len());
    }

    #[test]
    fn a_piece_bigger_than_its_buffer_guess_and_an_empty_stitch_are_valid_gzip() {
        let noise: Vec<u8> = (0..400_000u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let p = Piece::new(&noise[..1000], &[&noise, b"", &noise[..10]]);
        let mut want = noise.clone();
        want.extend(&noise[..10]);
        let mut z = vec![];
        // Its window is what came before it.
        let first = Piece::new(b"", &[&noise[..1000]]);
        z.push(first);
        z.push(p);
        let mut all = noise[..1000].to_vec();
        all.extend(&want);
        assert_eq!(gunzip(&stitch(&z).unwrap()), all);
        assert_eq!(gunzip(&stitch(&[]).unwrap()), b"");
    }

    #[test]
    fn crcs_combined_with_a_pieces_shift_are_the_crc_of_the_bytes_together() {
        let bytes: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 11) as u8)
            .collect();
        let crc = |b: &[u8]| {
            let mut c = flate2::Crc::new();
            c.update(b);
            c.sum()
        };
        for (a, b) in [
            (0, 0),
            (0, 7),
            (5, 0),
            (1, 1),
            (13, 4096),
            (40_000, 29_999),
            (3, 65_536),
        ] {
            let (x, y) = (&bytes[..a], &bytes[a..a + b]);
            let got = crc32::combine(crc(x), crc(y), crc32::shift(b as u64));
            assert_eq!(got, crc(&bytes[..a + b]), "{a} then {b}");
        }
        // Lengths from 2^29 bytes on wrap around the table, as zlib's do:
        // right only because x^(2^32) is x again modulo this polynomial.
        assert_eq!(crc32::past_the_table(), 1 << 30, "x^(2^32) is x");
    }

    #[test]
    fn gzipped_bodies_decompress_to_the_same_bytes() {
        let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let z = gzip(&body).unwrap();
        assert!(z.len() < body.len());
        let mut out = Vec::new();
        GzDecoder::new(&z[..]).read_to_end(&mut out).unwrap();
        assert_eq!(out, body);
    }

    #[test]
    fn a_compressed_body_that_cannot_grow_fails_with_the_size_it_asked_for() {
        let mut out = Fallible(b"z".to_vec());
        // No slice is this long; `room` is what refuses, as it would an
        // allocation the allocator declines.
        let e = recycle::room(&mut out.0, usize::MAX / 2).unwrap_err();
        let io = std::io::Error::new(std::io::ErrorKind::OutOfMemory, e);
        assert_eq!(
            refused(io, 7),
            NoMemory {
                bytes: usize::MAX / 2 + 1
            }
        );
        assert_eq!(out.0, b"z", "what it held is kept");
        let other = std::io::Error::other("not ours");
        assert_eq!(refused(other, 7), NoMemory { bytes: 7 });
        assert_eq!(out.write(b"ab").unwrap(), 2);
        assert_eq!(out.0, b"zab");
    }
}
