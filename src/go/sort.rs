//! Go's `sort` where the order of equal or inconsistently compared items
//! shows in the apiserver's answers.

/// Go's `sort.SliceStable`: insertion sort over blocks of 20, then
/// symmerge; with a consistent `less` any stable sort agrees, and the
/// insertion sort reproduces Go's answers for an inconsistent one (the
/// strategic merge patch's order of a `$setElementOrder`) on lists of up to 20 items.
pub fn slice_stable<T>(items: &mut [T], less: impl Fn(&T, &T) -> bool) {
    for i in 1..items.len() {
        let mut j = i;
        while j > 0 && less(&items[j], &items[j - 1]) {
            items.swap(j, j - 1);
            j -= 1;
        }
    }
}
