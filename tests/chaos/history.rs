//! The checks of answered writes against the upstream's history, alone.

use super::*;

#[cfg(test)]
mod answered_writes {
    use super::*;

    pub(crate) fn pod(name: &str) -> Key {
        Key {
            kind: Kind::Pod,
            ns: "ns".into(),
            name: name.into(),
        }
    }

    pub(crate) fn made(name: &str, rv: u64, change: Change, seq: Option<u64>) -> Made {
        let key = pod(name);
        Made {
            key,
            rv,
            change,
            seq,
        }
    }

    #[test]
    pub(crate) fn the_seq_annotation_is_read_from_the_apiservers_protobuf_and_from_json() {
        // ObjectMeta's annotations as protobuf map entries: a field tag and
        // a length before each string (etcd holds pods as protobuf).
        let proto =
            b"k8s\x00\x0a\x09\x0a\x02v1\x12\x03Pod\x62\x11\x0a\x09chaos/seq\x12\x043580\x6a\x00";
        assert_eq!(stored_seq(proto), Some(3580));
        let json = br#"{"metadata":{"annotations":{"chaos/seq":"3669"}}}"#;
        assert_eq!(stored_seq(json), Some(3669));
        assert_eq!(stored_seq(br#"{"metadata":{}}"#), None);
    }

    #[test]
    pub(crate) fn a_write_is_held_when_its_revision_holds_its_seq_and_lost_otherwise() {
        let history = [
            made("a", 10, Change::Added, Some(1)),
            made("b", 11, Change::Added, Some(2)),
            made("a", 12, Change::Modified, Some(3)),
            made("a", 13, Change::Deleted, None),
        ];
        let m: HashMap<(Kind, u64), &Made> =
            history.iter().map(|m| ((m.key.kind, m.rv), m)).collect();
        assert_eq!(not_held(&m, &pod("a"), 10, 1), None);
        assert_eq!(not_held(&m, &pod("a"), 12, 3), None);
        // Revision 12 rewritten with an earlier write of the same object.
        let other = not_held(&m, &pod("a"), 12, 7).unwrap();
        assert!(other.contains("write 3"), "{other}");
        assert!(not_held(&m, &pod("a"), 11, 2)
            .unwrap()
            .contains("pods ns/b"));
        assert!(not_held(&m, &pod("a"), 13, 4).unwrap().contains("delete"));
        assert!(not_held(&m, &pod("a"), 14, 5)
            .unwrap()
            .contains("no change"));
        // A stored object whose seq could not be read is no proof of loss.
        let unread = [made("a", 20, Change::Modified, None)];
        let m: HashMap<(Kind, u64), &Made> =
            unread.iter().map(|m| ((m.key.kind, m.rv), m)).collect();
        assert_eq!(not_held(&m, &pod("a"), 20, 9), None);
    }

    #[test]
    pub(crate) fn an_update_carried_out_as_a_delete_is_shown_only_by_a_delete_next() {
        // seed 2121's pod-5: created at 3680, its delete's first step at
        // 3728 (the apiserver then killed), an update answered at 3728,
        // and the delete it became at 3749.
        let history = [
            made("p", 3680, Change::Added, Some(3580)),
            made("q", 3700, Change::Added, Some(3600)),
            made("p", 3728, Change::Modified, Some(3580)),
            made("q", 3740, Change::Deleted, None),
            made("p", 3749, Change::Deleted, None),
            made("p", 3800, Change::Added, Some(3700)),
        ];
        assert_eq!(delete_shown(&history, &pod("p"), 3728), Ok(3749));
        // Answered at a version where it did not change, or whose next
        // change is not a delete: not shown.
        assert!(delete_shown(&history, &pod("p"), 3700).is_err());
        assert!(delete_shown(&history, &pod("p"), 3680).is_err());
        assert!(delete_shown(&history, &pod("p"), 3800).is_err());
        assert!(delete_shown(&history, &pod("p"), 3749).is_err());
    }
}
