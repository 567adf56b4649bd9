//! Which kube-apiserver's representations kubecache's own follow: the
//! upstream's minor version (`upstream::version` reads it), from v1.20 to
//! the newest release kubecache knows. Each difference between releases
//! that kubecache reproduces is a question asked of the personality here,
//! named for what changed and answered from the release that changed it;
//! an upstream newer than kubecache knows gets the newest personality.

use std::fmt;

/// A kube-apiserver minor release, as kubecache writes its representations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Personality {
    minor: u32,
}

impl Personality {
    /// v1.20: the real apiserver the tests run beside, and what kubecache
    /// assumes of an upstream whose version it has not read.
    pub const V1_20: Personality = Personality { minor: 20 };
    /// The newest release whose representations kubecache knows (answers
    /// recorded from v1.36.2 in `../shared/reference`).
    pub const NEWEST: Personality = Personality { minor: 36 };

    /// The personality of an upstream at `major.minor`: itself within
    /// what kubecache knows, the newest it knows for a newer one (and
    /// whether that is so), v1.20 for an older one.
    pub fn of(major: u32, minor: u32) -> (Personality, Fit) {
        if major > 1 || (major == 1 && minor > Self::NEWEST.minor) {
            return (Self::NEWEST, Fit::Newer);
        }
        if major < 1 || minor < Self::V1_20.minor {
            return (Self::V1_20, Fit::Older);
        }
        (Personality { minor }, Fit::Known)
    }

    pub fn minor(self) -> u32 {
        self.minor
    }

    fn since(self, minor: u32) -> bool {
        self.minor >= minor
    }

    /// Continue tokens name their start key with a leading `/`: the key
    /// relative to a prefix without its trailing slash, as the watch cache
    /// builds them since it serves paged lists (`ListFromCacheSnapshot`,
    /// on by default in 1.34); etcd's, before, start without it. Both are
    /// read alike (`decodeContinue` adds a missing `/`).
    pub fn slashed_continue_keys(self) -> bool {
        self.since(34)
    }

    /// Whose printers a Table is printed with: the release's own, from
    /// v1.20's to v1.36's (its printers.go and column definitions,
    /// recorded in `../shared/reference`), v1.36's for newer ones. Each
    /// release's are derived from the next newer one's: v1.35's are
    /// v1.36's but for the one printer 1.36 changed (a node's kernel
    /// version names its architecture: kubernetes#132402, in
    /// CHANGELOG-1.36's v1.36.0-alpha.1); v1.34's are v1.35's but for what
    /// 1.35 changed (service accounts' Secrets column, kubernetes#117160,
    /// in CHANGELOG-1.35's v1.35.0-alpha.1; a completed pod's failed
    /// container's reason, kubernetes#124766, merged after v1.34.0);
    /// v1.33's are v1.34's but for jobs' SuccessCriteriaMet status
    /// (kubernetes#132832, v1.34.0-beta.0) and resource.k8s.io/v1, which
    /// 1.33 does not serve. Their column descriptions are their own
    /// release's API docs (`columns_v1_3N.json`, which leave out the
    /// printers whose descriptions come from API versions those releases
    /// do not serve described from dated copies of those types;
    /// `columns_v1_32_to_35.py` says how each was dated). v1.32's are
    /// v1.33's but for resource quotas' Age, second as in v1.20 (#129419
    /// moved it last after v1.32.0), and extensions/v1beta1's older
    /// texts; v1.31's are v1.32's but for priority classes'
    /// PreemptionPolicy column (kubernetes#126529, 1.32); v1.30's are
    /// v1.31's but for a deleted pod in a terminal phase, still
    /// Terminating (#122038, 1.31); v1.29's are v1.30's without jobs'
    /// Status and cron jobs' Timezone columns, and with HPA targets not
    /// naming their metric (all three 1.30's); v1.28's are v1.29's without
    /// PVs' and PVCs' VolumeAttributesClass column, and with flowcontrol at
    /// v1beta3 and v1beta2 (both 1.29's changes); v1.27's are v1.28's but
    /// for pods, printed without sidecars (#116429 is 1.28's); v1.26's are
    /// v1.27's but for the alpha cluster trust bundles' printer (1.27's);
    /// v1.25's are v1.26's without pods' SchedulingGated and with
    /// flowcontrol at v1beta1/v1beta2, its priority levels'
    /// AssuredConcurrencyShares (both 1.26's changes); v1.24's are
    /// v1.25's (1.25's printer changes were output-neutral or alpha);
    /// v1.23's are v1.24's without storage.k8s.io/v1 CSI storage
    /// capacities and with 1.23's API docs (events left to the upstream:
    /// whether 1.23 has kubernetes#105009 is not established); v1.22's are
    /// v1.23's without flowcontrol v1beta2 and autoscaling/v2, an event
    /// series counted one more; v1.21's are v1.22's with v1.20's pods
    /// (restarts an integer: #100142 is 1.22's). Every release from v1.20
    /// has its own (`Personality::of` keeps the minor within them).
    pub fn printers(self) -> Printers {
        Printers::ALL
            .into_iter()
            .find(|p| p.minor() == self.minor)
            .expect("every release from v1.20 to the newest has printers")
    }

    /// Go's encoding/json quotes the byte a syntax error stopped at as a
    /// byte, `'\x81'`, where v1.20's quoted it as a rune, `'\u0081'`
    /// (kube-apiserver v1.36.2, built with go1.27.3, recorded writing it
    /// in a bad continue token's 400; v1.20 was built with go1.15). Which
    /// Go release changed it is not checked here: releases before v1.36
    /// are taken to word it as v1.20 did.
    pub fn quotes_json_error_bytes(self) -> bool {
        self.since(36)
    }

    /// `metadata.creationTimestamp` is `omitzero` (kubernetes#130989, in
    /// 1.34): an empty object's metadata no longer writes
    /// `"creationTimestamp":null`.
    pub fn omits_zero_creation_timestamp(self) -> bool {
        self.since(34)
    }

    /// The Go types protobuf is written with: v1.20's (older releases
    /// too), each of v1.21's to v1.35's, or v1.36's for v1.36 and newer
    /// (its messages checked against v1.36.2's recorded protobuf,
    /// `../shared/reference`).
    ///
    /// One schema cannot write them all: each release writes only the
    /// fields its Go types have, and some new ones are written even when
    /// unset (a pod's `status.observedGeneration`, 1.33; a CRD's, 1.35; a
    /// volume mount status's `volumeStatus`, 1.36), so v1.36's messages
    /// would add bytes to a v1.34 CRD or a v1.32 pod. v1.32's to v1.35's are each their
    /// own, derived as v1.36's are (`schema_v1_36.py --release N`): v1.33's
    /// from the k8s-pb crate generated from 1.33 (0.8.0), v1.32's from it
    /// less the fields the facts date 1.33, v1.34's and v1.35's from the
    /// one generated from 1.35.0 (0.9.0) less the fields dated later;
    /// every release's fields and kinds are checked against k8s-openapi's
    /// module of that release, and v1.33's are the same whichever crate
    /// they are derived from. Each serves the kinds its release serves by
    /// default (IP addresses and service CIDRs at networking v1 from 1.33,
    /// resource.k8s.io/v1 and storage's VolumeAttributesClass from 1.34,
    /// MutatingAdmissionPolicy v1 from 1.36). What neither source gives,
    /// a field's Go form (pointer or not, omitempty, JSON name), is the
    /// facts' (read from 1.36-era Go types) in every release: a released
    /// field's Go type is taken not to have changed since 1.32.
    ///
    /// Releases 1.21 to 1.31 added fields one by one (a pod's
    /// status.hostIPs in 1.28, sidecars' restartPolicy in 1.28, …),
    /// dropped or retyped some (ObjectMeta's clusterName, written always
    /// through 1.24; a PVC's dataSourceRef, a TypedLocalObjectReference in
    /// 1.22 to 1.25) and served betas since removed (batch/v1beta1 to
    /// 1.24, flowcontrol v1beta3 to 1.31…): each has its own schema, made
    /// the same way (k8s-pb 0.6.1, 0.3.0, 0.2.0 and 0.1.0 generated from
    /// 1.31, 1.30, 1.29 and 1.28; 1.21 to 1.27, for which no crate was
    /// generated, from 1.28's less the fields the facts date later and
    /// plus those gone by 1.28), each checked against k8s-openapi's module
    /// of its release (0.19.0 to 0.25.0). Unlike 1.32 and later, no
    /// answer of theirs was recorded to check bytes against.
    /// (`protobuf::Schema::of` reads them.) Always `Some` since every
    /// release has one; a custom resource's protobuf is the upstream's.
    pub fn protobuf(self) -> Option<Messages> {
        Some(Messages {
            minor: self.minor.clamp(20, 36) as u8,
        })
    }
}

impl Default for Personality {
    fn default() -> Self {
        Self::V1_20
    }
}

impl fmt::Display for Personality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v1.{}", self.minor)
    }
}

/// The printers a Table is printed with (`Personality::printers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Printers {
    V1_20,
    V1_21,
    V1_22,
    V1_23,
    V1_24,
    V1_25,
    V1_26,
    V1_27,
    V1_28,
    V1_29,
    V1_30,
    V1_31,
    V1_32,
    V1_33,
    V1_34,
    V1_35,
    V1_36,
}

impl Printers {
    /// Every release's printers, oldest first: what is kept per release
    /// (a type's printer, a columns file) is kept in `[_; COUNT]`s
    /// indexed by `index`.
    pub const ALL: [Printers; 17] = [
        Printers::V1_20,
        Printers::V1_21,
        Printers::V1_22,
        Printers::V1_23,
        Printers::V1_24,
        Printers::V1_25,
        Printers::V1_26,
        Printers::V1_27,
        Printers::V1_28,
        Printers::V1_29,
        Printers::V1_30,
        Printers::V1_31,
        Printers::V1_32,
        Printers::V1_33,
        Printers::V1_34,
        Printers::V1_35,
        Printers::V1_36,
    ];
    pub const COUNT: usize = Printers::ALL.len();

    /// The position in `ALL`.
    pub fn index(self) -> usize {
        Printers::ALL
            .iter()
            .position(|&p| p == self)
            .expect("every Printers is in ALL")
    }

    /// The release's minor version, for the rules that changed in one:
    /// `printers.minor() <= 33` is "before 1.34's change".
    pub fn minor(self) -> u32 {
        match self {
            Printers::V1_20 => 20,
            Printers::V1_21 => 21,
            Printers::V1_22 => 22,
            Printers::V1_23 => 23,
            Printers::V1_24 => 24,
            Printers::V1_25 => 25,
            Printers::V1_26 => 26,
            Printers::V1_27 => 27,
            Printers::V1_28 => 28,
            Printers::V1_29 => 29,
            Printers::V1_30 => 30,
            Printers::V1_31 => 31,
            Printers::V1_32 => 32,
            Printers::V1_33 => 33,
            Printers::V1_34 => 34,
            Printers::V1_35 => 35,
            Printers::V1_36 => 36,
        }
    }
}

/// The Go types protobuf is written with (`Personality::protobuf`): a
/// release from v1.20 to v1.36.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Messages {
    minor: u8,
}

impl Messages {
    pub const V1_20: Messages = Messages { minor: 20 };
    pub const V1_36: Messages = Messages { minor: 36 };

    /// The release's minor version (20 to 36).
    pub fn minor(self) -> u32 {
        self.minor.into()
    }
}

/// How an upstream's version fits what kubecache knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    Known,
    /// Newer than the newest kubecache knows: its representations are
    /// written as the newest's.
    Newer,
    /// Older than v1.20: written as v1.20's.
    Older,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_release_is_itself_a_newer_one_the_newest_known() {
        assert_eq!(Personality::of(1, 36), (Personality::NEWEST, Fit::Known));
        assert_eq!(Personality::of(1, 28).0.minor(), 28);
        assert_eq!(Personality::of(1, 41), (Personality::NEWEST, Fit::Newer));
        assert_eq!(Personality::of(2, 0), (Personality::NEWEST, Fit::Newer));
        assert_eq!(Personality::of(1, 18), (Personality::V1_20, Fit::Older));
    }

    #[test]
    fn protobuf_is_written_with_each_releases_messages_from_v1_20_to_v1_36() {
        let release = |p: Personality| p.protobuf().unwrap().minor();
        assert_eq!(release(Personality::V1_20), 20);
        assert_eq!(release(Personality::of(1, 19).0), 20);
        for minor in 21..=36 {
            assert_eq!(release(Personality::of(1, minor).0), minor, "1.{minor}");
        }
        assert_eq!(release(Personality::NEWEST), 36);
        assert_eq!(release(Personality::of(1, 40).0), 36);
    }

    #[test]
    fn v1_34_changed_continue_keys_and_empty_creation_timestamps() {
        for p in [Personality::V1_20, Personality::of(1, 33).0] {
            assert!(
                !p.slashed_continue_keys() && !p.omits_zero_creation_timestamp(),
                "{p}"
            );
        }
        for p in [Personality::of(1, 34).0, Personality::NEWEST] {
            assert!(
                p.slashed_continue_keys() && p.omits_zero_creation_timestamp(),
                "{p}"
            );
        }
    }

    #[test]
    fn tables_are_printed_as_each_release_from_v1_20_prints_them() {
        assert_eq!(Personality::V1_20.printers(), Printers::V1_20);
        assert_eq!(Personality::of(1, 19).0.printers(), Printers::V1_20);
        for minor in 20..=36 {
            assert_eq!(
                Personality::of(1, minor).0.printers().minor(),
                minor,
                "1.{minor}"
            );
        }
        assert_eq!(Personality::of(1, 23).0.printers(), Printers::V1_23);
        assert_eq!(Personality::NEWEST.printers(), Printers::V1_36);
        assert_eq!(Personality::of(1, 40).0.printers(), Printers::V1_36);
    }
}
