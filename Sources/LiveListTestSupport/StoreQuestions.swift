import LiveListEngine

// The contract asks every store the questions of a shared one (``SharedListStore``): a store of one
// process answers them as one that shares nothing would, so that one check can say what each kind of
// store must do. The engine itself asks a store once, at opening, whether it is shared.

extension ListStore {
    /// Whether the store is a ``SharedListStore``.
    var isShared: Bool { asShared != nil }

    func update(of name: String, after version: Int) throws(StoreError) -> StoredUpdate? {
        try asShared?.update(of: name, after: version)
    }

    func versions() throws(StoreError) -> [String: Int] {
        try asShared?.versions() ?? [:]
    }

    func versions(of names: [String]) throws(StoreError) -> [String: Int] {
        try asShared?.versions(of: names) ?? [:]
    }

    func notices() -> AsyncStream<StoreNotice> {
        asShared?.notices() ?? AsyncStream { $0.finish() }
    }

    func holdsLease(_ name: String) -> Bool {
        asShared?.holdsLease(name) ?? true
    }

    func idempotentWrite(of name: String, key: String) throws(StoreError) -> IdempotentWrite? {
        try asShared?.idempotentWrite(of: name, key: key)
    }

    func revocations(after position: Int?) throws(StoreError) -> RevocationBatch {
        try asShared?.revocations(after: position) ?? RevocationBatch(revocations: [], position: position ?? 0)
    }
}
