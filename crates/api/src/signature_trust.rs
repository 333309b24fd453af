//! The roots a signed VERI*FACTU authorization document must chain to: the Spanish
//! certification authorities shipped in `crates/api/trust/` (see its README), and the
//! operator's own (`INVOICING_AEAT_SIGNATURE_TRUST`).

pub use pdfsig::TrustStore;

/// The Spanish roots of Mozilla's CA set that certify people and companies.
pub const SPANISH_ROOTS_PEM: &str = include_str!("../trust/spanish-roots.pem");

/// The store: the shipped Spanish roots unless `bundled` is false, plus every certificate
/// of `extra` (PEM text; `name` says where it came from, for the error).
pub fn trust_store(bundled: bool, extra: Option<(&str, &[u8])>) -> Result<TrustStore, String> {
    let mut store = TrustStore::new();
    if bundled {
        store
            .add_pem(SPANISH_ROOTS_PEM.as_bytes())
            .map_err(|e| format!("the shipped Spanish roots cannot be read: {e}"))?;
    }
    if let Some((name, pem)) = extra {
        store
            .add_pem(pem)
            .map_err(|e| format!("INVOICING_AEAT_SIGNATURE_TRUST ({name}): {e}"))?;
    }
    if store.is_empty() {
        return Err(
            "no root is trusted for signed authorization documents: with \
             INVOICING_AEAT_SIGNATURE_TRUST_BUNDLED=false, set INVOICING_AEAT_SIGNATURE_TRUST"
                .into(),
        );
    }
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_roots_are_the_ones_the_readme_lists() {
        let store = trust_store(true, None).unwrap();
        let readme = include_str!("../trust/README.md");
        let fingerprints = store.fingerprints();
        assert_eq!(
            fingerprints,
            [
                "EB:C5:57:0C:29:01:8C:4D:67:B1:AA:12:7B:AF:12:F7:03:B4:61:1E:BC:17:B7:DA:B5:57:38:94:17:9B:93:FA",
                "9A:6E:C0:12:E1:A7:DA:9D:BE:34:19:4D:47:8A:D7:C0:DB:18:22:FB:07:1D:F1:29:81:49:6E:D1:04:38:41:13",
                "57:DE:05:83:EF:D2:B2:6E:03:61:DA:99:DA:9D:F4:64:8D:EF:7E:E8:44:1C:3B:72:8A:FA:9B:CD:E0:F9:B2:6A",
                "25:30:CC:8E:98:32:15:02:BA:D9:6F:9B:1F:BA:1B:09:9E:2D:29:9E:0F:45:48:BB:91:4F:36:3B:C0:D4:53:1F",
            ]
        );
        for f in &fingerprints {
            assert!(readme.contains(f.as_str()), "README lacks {f}");
        }
        assert!(store.subjects().iter().all(|s| s.contains("C=ES")));
    }

    #[test]
    fn extra_roots_add_or_replace_and_bad_files_are_refused() {
        let ca = pdfsig::testing::TestCa::root("Operator Root");
        let pem = ca.pem().as_bytes();
        assert_eq!(trust_store(true, Some(("x.pem", pem))).unwrap().len(), 5);
        assert_eq!(trust_store(false, Some(("x.pem", pem))).unwrap().len(), 1);
        let err = trust_store(true, Some(("x.pem", b"not pem"))).unwrap_err();
        assert!(
            err.contains("INVOICING_AEAT_SIGNATURE_TRUST (x.pem)"),
            "{err}"
        );
        assert!(trust_store(false, None).is_err());
    }
}
