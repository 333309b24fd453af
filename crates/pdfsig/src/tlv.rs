//! A minimal DER walker that keeps the exact bytes of each element.
//!
//! Typed decoding (the `cms` and `x509-cert` crates) re-sorts `SET OF` values, so bytes
//! re-encoded from it may differ from what was signed. Signatures are checked over the
//! original bytes (the signed attributes, each certificate), which this walker returns.

/// One element: its tag byte, its whole encoding and its contents.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tlv<'a> {
    pub tag: u8,
    pub raw: &'a [u8],
    pub content: &'a [u8],
}

/// Tag bytes used while walking CMS.
pub(crate) mod tag {
    pub const OID: u8 = 0x06;
    pub const SEQUENCE: u8 = 0x30;
    pub const SET: u8 = 0x31;
    /// `[0]` constructed (EXPLICIT content, or IMPLICIT certificates / signed attributes).
    pub const CONTEXT_0: u8 = 0xA0;
}

/// Reads one element from the start of `input`; returns it and what follows.
pub(crate) fn read(input: &[u8]) -> Result<(Tlv<'_>, &[u8]), String> {
    let (&tag, rest) = input
        .split_first()
        .ok_or_else(|| "an element is missing".to_owned())?;
    if tag & 0x1f == 0x1f {
        return Err("a high tag number is not expected here".into());
    }
    let (&first, rest) = rest
        .split_first()
        .ok_or_else(|| "an element has no length".to_owned())?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        // 0x80 is BER's indefinite length, which DER forbids; 4 length bytes cover 4 GiB.
        if n == 0 || n > 4 || rest.len() < n {
            return Err("an element has an invalid length (DER is required)".into());
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return Err("an element is truncated".into());
    }
    let header = input.len() - rest.len();
    Ok((
        Tlv {
            tag,
            raw: &input[..header + len],
            content: &rest[..len],
        },
        &rest[len..],
    ))
}

/// Reads exactly one element of the given tag that fills `input`.
pub(crate) fn single<'a>(input: &'a [u8], expected: u8, what: &str) -> Result<Tlv<'a>, String> {
    let (tlv, rest) = read(input)?;
    if tlv.tag != expected {
        return Err(format!("{what} has an unexpected type"));
    }
    if !rest.is_empty() {
        return Err(format!("bytes follow {what}"));
    }
    Ok(tlv)
}

/// The elements inside `content`, at most `limit` of them.
pub(crate) fn children(content: &[u8], limit: usize) -> Result<Vec<Tlv<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        if out.len() == limit {
            return Err(format!("more than {limit} elements where few are expected"));
        }
        let (tlv, next) = read(rest)?;
        out.push(tlv);
        rest = next;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_short_and_long_lengths_and_keeps_raw_bytes() {
        let long: Vec<u8> = [0x04, 0x81, 0x80]
            .into_iter()
            .chain(std::iter::repeat_n(7, 128))
            .collect();
        let mut input = vec![0x30, 0x03, 0x02, 0x01, 0x05];
        input.extend_from_slice(&long);
        let (first, rest) = read(&input).unwrap();
        assert_eq!(
            (first.tag, first.raw.len(), first.content),
            (0x30, 5, &[2, 1, 5][..])
        );
        let second = single(rest, 0x04, "the octets").unwrap();
        assert_eq!((second.raw, second.content.len()), (&long[..], 128));
        let inner = children(first.content, 4).unwrap();
        assert_eq!((inner.len(), inner[0].content), (1, &[5][..]));
    }

    #[test]
    fn refuses_indefinite_truncated_and_too_many() {
        assert!(read(&[0x30, 0x80, 0, 0]).is_err());
        assert!(read(&[0x30, 0x05, 1]).is_err());
        assert!(read(&[0x1f, 0x01, 0]).is_err());
        assert!(read(&[]).is_err());
        assert!(children(&[5, 0, 5, 0, 5, 0], 2).is_err());
        assert!(single(&[5, 0, 5, 0], 5, "x").is_err());
    }
}
