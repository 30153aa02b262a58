/// Whether two strings hold the same UTF-8 bytes. Swift's `==` takes canonically equivalent spellings
/// for one (`"\u{E9}"` and `"e\u{301}"`); HTML, the DOM and LiveList's protocol never do, so wherever
/// LiveList decides that a text, a key or a rendering is unchanged, it compares bytes.
package func sameBytes(_ a: String, _ b: String) -> Bool {
    let left = a.utf8
    let right = b.utf8
    guard left.count == right.count else { return false }
    // Native strings hold their bytes contiguously: compared as buffers, which is much faster than
    // walking the views.
    if let same = left.withContiguousStorageIfAvailable({ l in right.withContiguousStorageIfAvailable { r in l.elementsEqual(r) } }),
        let same {
        return same
    }
    return left.elementsEqual(right)
}

/// `sameBytes(_:_:)` of two optional strings: both nil, or both present with the same bytes.
package func sameBytes(_ a: String?, _ b: String?) -> Bool {
    switch (a, b) {
    case (nil, nil): true
    case let (a?, b?): sameBytes(a, b)
    default: false
    }
}
